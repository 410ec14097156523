// Planner: which layout to train a net in on a topology, decided by simulation.
//
// It enumerates groups x stages = the device count, micro-batch counts that split the batch
// evenly, both schedules (one when there is one micro-batch), and two device orders when there
// are groups and stages both and the topology is not flat:
//   packed: a group's stages on neighbouring devices (in the topology's order, which lists the
//           devices under one switch together), so stage-to-stage copies stay under a switch;
//   spread: the replicas of a stage on neighbouring devices, so the all-reduce stays local.
// For each it cuts the net with the partitioner (the slowest stage smallest within every cap);
// a layout that does not fit is tried again with recomputation (and, with one stage, more
// micro-batches) before it is dropped. The survivors are simulated and ranked by images/s,
// except that a simpler layout goes first when a more complex one is predicted faster by less
// than PlannerOptions::simpler_within (rank_plans).
//
// The cost model's layers are what the partitioner cuts: a chain's top-level layers, or the
// units of a net whose graphs and residual blocks are opened (parallel/unit_placement.h,
// kPlanOpening), whose cuts make a stage graph (PlannerOptions::stage_graph) where branches on
// different stages run at once. Each layout is cut twice, between top-level layers and
// anywhere (inside a block, to balance a deep pipeline; inside a graph, to put its branches
// apart), and the faster simulation kept: its plan is then a placement of those units.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "plan/partitioner.h"
#include "plan/simulator.h"

namespace tandem {

struct PlannerOptions {
    std::int64_t batch = 0;  // global batch
    int devices = 0;         // 0: every device of the topology
    std::vector<int> micro_batches = {1, 2, 4, 8, 16, 32};
    ReduceAlgorithm algorithm = ReduceAlgorithm::ring;
    bool parameter_server = false;  // Plan::parameter_server: a baseline, not the engine's
    bool nccl_auto = false;         // Plan::nccl_auto: NCCL's own choice ('auto')
    std::size_t bucket_bytes = std::size_t(25) << 20;
    bool overlap_backward = true;  // as the engine's option
    // A simpler layout (complexity() in planner.cpp says what makes one simpler, in order)
    // ranks above one predicted faster by less than this fraction of its rate (0: by
    // prediction alone). The cost model errs most on what makes a layout complex (20-25% for
    // this repository's CPU pipelines, docs/benchmarks.md), so a smaller lead is no lead.
    double simpler_within = 0.1;
    // When the cost model's layers are a net's units with its graphs and blocks opened
    // (unit_placement.h): the stage graph of cuts of them for micro-batches of a size, and per
    // unit the top-level layer it is part of ("" for a top-level layer). Null and empty: a chain.
    std::function<StageGraph(const std::vector<std::size_t>& cuts, std::int64_t micro_batch)>
        stage_graph;
    std::vector<std::string> unit_owners;
};

struct RankedPlan {
    Plan plan;
    Simulation simulation;
    Partition partition;
    std::string topology;  // its name
    int threads = 0;       // kernel threads of its devices (CPU topologies; 0 for GPUs)
    std::string model;     // its devices' model: 'cpu', 'V100', ... (what a run checks against)
    int cores = 0;         // CPU topologies: the cores the devices share (0 for GPUs)
};

struct PlanSearch {
    std::vector<RankedPlan> plans;  // as rank_plans orders them
    double simpler_within = 0;      // PlannerOptions' (what the table explains)
    int considered = 0;             // layouts tried
    int over_memory = 0;            // of which none fitted
    std::vector<std::string> layer_names;
    std::vector<std::string> unit_owners;  // PlannerOptions'; empty for a chain's layers

    // Whether a stage of the plan ends inside an opened layer (a graph or a block): the plan is
    // then a placement (stage_names), not cuts of a chain (split_names).
    bool cuts_inside(const RankedPlan& plan) const;
    // The top-level layers after which its stages end (parallel.split).
    std::vector<std::string> split_names(const RankedPlan& plan) const;
    // Each stage's names, as parallel.placement takes them: an opened layer by its own name when
    // it is all on the stage, by its units' names when a boundary falls inside it.
    std::vector<std::vector<std::string>> stage_names(const RankedPlan& plan) const;

    // The fastest pure data-parallel (G = devices, S = 1) and pure pipeline (G = 1, GPipe)
    // plans; null when none fitted.
    const RankedPlan* pure_data_parallel() const;
    const RankedPlan* pure_pipeline() const;
};

PlanSearch search_plans(const Topology& topology, const CostModel& costs,
                        const PlannerOptions& options);
// Orders `plans` for the user to take the first: again and again the simplest of the plans
// left that are predicted within `simpler_within` of the fastest left (by images/s, and the
// least peak memory among equals), so a complex layout goes first only when it leads by more.
void rank_plans(std::vector<RankedPlan>& plans, double simpler_within);
// Adds `other`'s plans (another topology of the same machine: other device counts) and ranks all.
void merge_plans(PlanSearch& into, PlanSearch other);

// The ranked table: the top `top` plans and, for reference, the best pure data-parallel and
// pure pipeline ones, with step time, images/s, bubble, exposed communication, peak memory,
// and the speed against pure data parallelism.
std::string format_plans(const PlanSearch& search, std::size_t top = 10);

// A Lua file `tandem run RECIPE --plan=FILE` reads: groups, stages, micro-batches, schedule,
// recompute, the cuts by layer name (or, for a graph's units, each stage's names: placement),
// the devices (their order and indices) and their threads, and the prediction.
std::string plan_to_lua(const RankedPlan& plan, const PlanSearch& search);

}  // namespace tandem

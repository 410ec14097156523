// Stage: one stage of one group of an engine's placement, and what its worker does in a step.
//
// It owns the stage's share of the training: its device, its layers (a node of the stage
// graph, stage_graph.h: a range of its placement's units in its group's replica of the net),
// their parameters named as in the whole net ("fc1.weight"), the gradient buckets and reduce
// lane it all-reduces through when there are several groups, and model averaging's state
// (averaging.h: the global model, block momentum or centre). It executes a stage program's ops
// (program.h) on them: before the step's barrier in run(), after it in update().
//
// It speaks edges, not neighbours: each send and receive goes through the StepBoard under the
// op's edge; an output read by several stages is posted on each of their edges, and the
// gradients they send back are summed (with the loss's) in program order. A stage runs its
// units of the placement (unit_placement.h: a chain's top-level layers, or graph nodes on
// different devices) as a GraphPart, with a value on each input and output edge, so it may
// take several inputs and make several outputs.
//
// The engine keeps what spans stages: placement, steps, checkpoints, the replicas' optimizer
// and loss, the communicators, and error handling (a failure on one stage stops them all).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "layers/graph_part.h"
#include "layers/loss.h"
#include "layers/sequential.h"
#include "optim/optimizer.h"
#include "parallel/averaging.h"
#include "parallel/buckets.h"
#include "parallel/parallel_options.h"
#include "parallel/program.h"
#include "parallel/reduce_lane.h"
#include "parallel/step_plan.h"
#include "parallel/unit_placement.h"

namespace tandem {

class BatchNorm2d;
class Trace;

// What the engine hands a stage when it places it.
struct StageParts {
    int group = 0, stage = 0;
    // The group's rank among the replicas of the stage (every process's groups, under MPI).
    int rank = 0;
    int replicas = 1;
    Device* device = nullptr;
    std::shared_ptr<Sequential> net;  // the group's replica, whose units the stage runs
    std::shared_ptr<Loss> loss;       // the group's: the stage making the net's output computes it
    Optimizer* optimizer = nullptr;   // the group's, over this stage's parameters
    std::shared_ptr<const UnitPlacement> units;  // the placement: the stage runs its node's units
    Communicator* communicator = nullptr;        // among the replicas of the stage; null with one
    const ParallelOptions* parallel = nullptr;
    float clip_norm = 0;  // > 0: gradients clipped to this global norm before the update
    Layout layout = Layout::contiguous;  // of the images as the first stage takes them
    Trace* trace = nullptr;
};

class Stage {
public:
    explicit Stage(StageParts parts);
    ~Stage();
    Stage(const Stage&) = delete;
    Stage& operator=(const Stage&) = delete;

    Device& device() const { return *parts_.device; }
    int group() const { return parts_.group; }
    int index() const { return parts_.stage; }
    // Named as in the whole net; listed once, at placement.
    const std::vector<NamedParameter>& parameters() const { return parameters_; }
    // The gradient buckets (null with one replica), in the order the programs post them.
    const GradientBuckets* buckets() const { return buckets_.get(); }
    // Model averaging's algorithm and state (null without averaging or with one replica).
    ModelAverage* model_average() const { return average_.get(); }

    // The program's ops up to the barrier: this stage's part of a step or an evaluation.
    void run(StepPlan& plan, const DeviceProgram& program);
    // The program's ops after the barrier (training): the optimizer's update at `lr`, model
    // averaging, deferred batch norm's statistics. `copies`: this stage in every local group,
    // in group order (their statistics are merged).
    void update(const StepPlan& plan, const DeviceProgram& program, float lr,
                const std::vector<Stage*>& copies);
    // After a failed step: waits for the collectives posted to the lane (the communicators
    // have been aborted, so they end), dropping their errors.
    void drain_lane() noexcept;

private:
    struct Run;
    // The per-op parts of run().
    void forward(Run& run, const Op& op);
    void backward(Run& run, const Op& op);
    void all_reduce(std::size_t bucket, const std::string& track, std::int64_t step);
    void fold_batch_norm(const StepPlan& plan, const std::vector<Stage*>& copies);
    std::vector<BatchNorm2d*> batch_norms() const;
    float loss_scale(const StepPlan& plan) const;
    void clip_gradients(const StepPlan& plan);

    // The value carried by edge `edge`.
    std::size_t edge_value(int edge) const {
        return parts_.units->edge_values[static_cast<std::size_t>(edge)];
    }

    StageParts parts_;
    std::size_t begin_ = 0, end_ = 0;  // its units in the placement
    // The stage's units' layers, each with the name its parameters' names start with.
    std::vector<std::pair<std::string, Layer*>> layers_;
    std::unique_ptr<GraphPart> part_;  // its units to run
    std::vector<NamedParameter> parameters_;
    std::unique_ptr<GradientBuckets> buckets_;  // several replicas
    std::unique_ptr<ReduceLane> lane_;          // when buckets go during backward
    std::unique_ptr<ModelAverage> average_;     // model averaging
};

}  // namespace tandem

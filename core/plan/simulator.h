// Simulator: one training step of a plan on a topology, event by event, before anything runs.
//
// What it plays out is the engine's own stage programs (parallel/program.h), built by the same
// generator from the plan, op by op, each timed with the cost model:
//  - each device's ops in its program's order, one at a time: inputs, forward and backward of
//    every micro-batch of its stage in the schedule's order, the loss on the last stage;
//  - a micro-batch's activation goes along each of the stage's output edges after its forward
//    (to the next stage of a chain, or to every branch of a stage graph), its gradient back
//    after its backward; a receive waits for its edge's tensor. Between GPUs the copy crosses the
//    topology's channels (one direction of each link on the route), which copies share first come,
//    first served; between CPU devices the receiving worker copies it itself, as part of its op;
//  - a stage's gradients are all-reduced with the same stage of the other groups, bucket by
//    bucket (ring: 2(n-1) steps of n copies of a 1/n chunk, one ring per NIC across machines;
//    tree: NCCL's double binary tree with a chain in each machine, pipelined, its channels held
//    for its closed-form time; collectives.h; or, as a baseline, through a parameter server on
//    group 0's device), the buckets filled layer by layer in backward order. With overlap_backward
//    (the engine's default) a bucket goes as soon as the last micro-batch's backward has passed
//    its layers, on the stage's lane: the worker goes on with the rest of its backward. The
//    collectives of a stage run one after another. On GPUs the copies use the channels; on CPU
//    devices the lanes reduce in shared memory, on the pool's cores. Without the overlap, a
//    stage's buckets go after its last backward, and CPU workers reduce them themselves (every
//    member waits for the others);
//  - once every device has finished (the engine's barrier: a failed step changes no weight),
//    each device runs its optimizer step.
// CPU devices share their machine's cores: while the busy devices ask for more threads than the
// pool has, each runs slower in proportion (processor sharing).
//
// Output: step time, images/s, the bubble (the devices' idle share until the last backward),
// the communication left exposed after it, each device's peak memory, and the spans as a Chrome
// trace with the engine's tracks (device names), op names and categories.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/trace.h"
#include "parallel/parallel_options.h"
#include "parallel/stage_graph.h"
#include "plan/cost_model.h"
#include "plan/stage_cost.h"
#include "plan/topology.h"

namespace tandem {

struct Plan {
    int groups = 1, stages = 1, micro_batches = 1;
    PipelineSchedule schedule = PipelineSchedule::gpipe;
    bool recompute = false;         // every stage recomputes its activations
    std::vector<std::size_t> cuts;  // S - 1 cut points (partitioner.h)
    // Or the stages as a graph over the cost model's layers (stage_graph.h; no cuts then), its
    // edges carrying their bytes: branches on different devices run at once.
    StageGraph graph;
    // The topology device running stage s of group g, at g * S + s; empty: 0, 1, 2, ...
    std::vector<int> devices;
    std::int64_t batch = 0;  // global batch: G x M micro-batches of batch / (G M)
    ReduceAlgorithm algorithm = ReduceAlgorithm::ring;
    std::size_t bucket_bytes = std::size_t(25) << 20;
    bool overlap_backward = true;  // buckets reduced during the last backward (engine.h)
    // A baseline the engine does not run, to compare with the seeds' and older frameworks'
    // data parallelism: instead of an all-reduce, every replica sends each bucket of gradients
    // to group 0's device, which sums them and sends the result back to each (PyTorch's
    // single-process nn.DataParallel, a parameter server on one GPU). GPUs only.
    bool parameter_server = false;
    // NCCL's own choice (algorithm 'auto'): each GPU bucket's all-reduce runs the algorithm and
    // protocol NCCL's tuning model picks for its size (nccl_tuning.h), NVLS where the switch
    // reduces; without it `algorithm` runs with NCCL's Simple protocol. CPU devices: `algorithm`.
    bool nccl_auto = false;
    std::string device_order;  // how devices were chosen (planner.h), for the tables

    std::int64_t micro_batch() const { return batch / (groups * micro_batches); }
    // The engine's options that run this plan (parallel/parallel_options.h).
    ParallelOptions parallel_options() const;
    // "2x2x4 1f1b" and " recompute" when it does.
    std::string label() const;
};

struct SimulatedDevice {
    std::string name;
    int group = 0, stage = 0;
    StageMemory memory;          // static part and one micro-batch's activations
    std::size_t peak_bytes = 0;  // simulated peak (static + live activations + transients)
    std::size_t cap = 0;
    double busy_ms = 0;  // forward and backward time
};

struct Simulation {
    double step_ms = 0;
    double images_per_s = 0;
    double compute_ms = 0;       // when the last backward ends
    double bubble = 0;           // devices' idle share of [0, compute_ms]
    double exposed_comm_ms = 0;  // all-reduce after the last backward, before the updates
    double update_ms = 0;        // the optimizer phase
    // How long some CPU pool had more busy threads than cores: time the kernel's scheduler
    // shares out, which the simulation prices least well (docs/planner.md).
    double crowded_ms = 0;
    std::vector<SimulatedDevice> devices;  // per plan device, g * S + s
    std::vector<TraceEvent> events;        // when asked for

    bool fits() const;
    std::size_t peak_bytes() const;  // the largest device peak
};

// Throws ConfigError for a plan that does not fit the topology or the net (devices, cuts,
// a batch that does not split into G x M equal micro-batches).
Simulation simulate(const Plan& plan, const Topology& topology, const CostModel& costs,
                    bool trace = false);

// One all-reduce of `bytes` among `devices` (topology indices) alone on the topology, as the
// simulator plays a step's bucket: for comparing with nccl-tests' bus bandwidth. With
// `parameter_server`, the baseline's exchange through the first device instead; with
// `nccl_auto`, NCCL's choice (Plan::nccl_auto).
double simulate_all_reduce_ms(const Topology& topology, const std::vector<int>& devices,
                              std::size_t bytes, ReduceAlgorithm algorithm,
                              bool parameter_server = false, bool nccl_auto = false);

// Writes the simulated spans as a Chrome trace (the format of Trace::write).
void write_simulated_trace(const Simulation& simulation, const std::string& path);

}  // namespace tandem

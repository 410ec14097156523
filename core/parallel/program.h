// Stage programs: for every device of a placement, the ordered list of the ops it runs in one
// training step (or one evaluation pass).
//
// One generator (build_programs) turns the net's stage graph (stage_graph.h: the stages, the
// edges between them), its parameter sizes and the parallel options into the programs; the
// engine executes them (stage.cpp), the simulator times the very same lists with a cost model
// (plan/simulator_queues.cpp), and both name each trace span after its op. So what the planner
// predicts is what runs, op for op, and a pipeline schedule (parallel/schedule.h) is only the
// order of forwards and backwards that the generator reads.
//
// A device's program, training:
//   per forward of micro-batch m:  per input edge: load_input (from the batch) |
//                                  receive_activation (from a stage); forward;
//                                  per output edge: send_activation, then loss (to the loss)
//   per backward of m:             loss_gradient (the loss stage), then per output edge to a
//                                  stage: receive_gradient (several are summed into one
//                                  gradient of the stage's output, in this order: Stage::run);
//                                  [recompute], backward (in pieces when buckets go out during
//                                  it, each piece followed by the all_reduce of the buckets it
//                                  finished), [stash_gradients], per input edge from a stage:
//                                  send_gradient
//   then:                          [sum_gradients], all_reduce of each bucket | wait_lane,
//                                  [unscale_gradients], [gradient_norm],
//   barrier (every device has finished: a failed step changes no weight), update,
//                                  [average_weights], [fold_batch_norm].
// Synchronised batch norm runs a stage's micro-batches together: every input, one forward
// over all (micro_batch = kEveryMicroBatch), the losses or sends, every gradient, one
// backward, the sends, the all-reduces. Evaluation: the forwards and losses only. Each stage
// orders its forwards and backwards by its depth in the graph, which no graph can deadlock
// (the proof is in schedule.cpp).
//
// Devices are numbered as the engine numbers them: group g's stage s is device g * S + s. A
// send or receive names the edge it moves along (`edge`: the StepBoard's key, and the
// simulator's) and the device at its other end (`peer`). A chain of stages is the graph
// chain_stage_graph makes from `bounds`; its programs are what they were before graphs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "layers/pass.h"
#include "parallel/parallel_options.h"
#include "parallel/stage_graph.h"

namespace tandem {

enum class OpKind {
    load_input,          // a stage reading the batch: micro-batch m's images, onto its device
    receive_activation,  // micro-batch m's activation, from `peer` along `edge`
    forward,             // layers [layer_begin, layer_end) of micro-batch m
    loss,                // the loss stage: the loss's forward
    send_activation,     // to `peer` along `edge`
    loss_gradient,       // the loss stage: the loss's gradient, where backward starts
    receive_gradient,    // from `peer`, back along `edge`
    recompute,           // the stage's forward again, keeping what backward needs
    backward,         // layers [layer_begin, layer_end), from the gradient of the last one's output
    stash_gradients,  // deterministic mode: micro-batch m's gradients set apart
    send_gradient,    // to `peer`, back along `edge`
    sum_gradients,    // deterministic mode: the stashed gradients summed in a fixed order
    all_reduce,       // bucket `bucket` with the other replicas of the stage
    wait_lane,        // the worker waits for the all-reduces posted to its lane
    unscale_gradients,  // loss scaling: the final gradients divided by the scale, checked finite
    gradient_norm,      // gradient clipping: the sum of squares of the stage's final gradients
    barrier,            // every device of the step has come this far
    update,             // the optimizer step
    average_weights,    // model averaging: weights and buffers averaged over the replicas
    fold_batch_norm,    // deferred batch norm: the whole batch's statistics into the running ones
};

// The op's name in traces ("forward", "receive activation", "all-reduce", ...) and its
// category (forward, backward, transfer, allreduce, optimizer, loss, gradients).
std::string_view op_name(OpKind kind);
std::string_view op_category(OpKind kind);
// Whether the op is recorded as a trace span (sends are hand-offs, barrier and wait_lane
// waits: none takes work of its own).
bool op_traced(OpKind kind);

constexpr int kEveryMicroBatch = -2;  // Op::micro_batch: all of them at once

struct Op {
    OpKind kind = OpKind::forward;
    int micro_batch = -1;  // within the group; kEveryMicroBatch for all at once; -1 when none
    std::size_t layer_begin = 0, layer_end = 0;  // forward, recompute, backward
    // forward: keep what backward needs (false when a recompute op rebuilds it).
    bool keeps_activations = true;
    int bucket = -1;       // all_reduce
    bool on_lane = false;  // all_reduce: posted to the stage's lane, the worker goes on
    int peer = -1;         // send and receive: the device at the other end
    // The stage-graph edge the op moves a tensor along: sends, receives, load_input (an edge
    // from the batch) and the loss ops (the edge to the loss); -1 for the others.
    int edge = -1;
    std::size_t bytes = 0;  // sends, receives and all-reduces: what moves (0 when not known)

    bool operator==(const Op&) const = default;
};

struct DeviceProgram {
    int group = 0, stage = 0;
    std::vector<Op> ops;
};

struct ProgramSpec {
    Mode mode = Mode::train;
    ParallelOptions parallel;  // groups and micro_batches as this run uses them
    // The stages: a chain's S + 1 bounds (stage s runs top-level layers [bounds[s],
    // bounds[s + 1])), or a stage graph of S stages over the layers `parameter_bytes` lists.
    // One of the two, not both.
    std::vector<std::size_t> bounds;
    StageGraph graph;
    // Per top-level layer, the bytes of each of its parameter tensors, in the order the layer
    // lists them: what gradient buckets are made of (parallel/buckets.h).
    std::vector<std::vector<std::size_t>> parameter_bytes;
    // Optional, with `bounds`, S + 1 entries: one micro-batch's activation at each bound
    // (entry 0: the input), for the bytes of sends and receives (a graph's edges carry their own).
    std::vector<std::size_t> boundary_bytes;
    // Copies of each stage whose gradients are reduced together: the groups of every process.
    int replicas = 1;
    std::int64_t step = 0;  // the step the program is for (model averaging's period)
    // The optimizer clips gradients by their global norm: each stage adds up its squares
    // before the barrier, and the update scales by what the group's stages found together.
    bool clip_gradients = false;
    // Loss scaling: each stage divides its final gradients by the scale and checks them before
    // the barrier (so clipping sees them unscaled), and the update skips a non-finite step.
    bool unscale_gradients = false;
};

// A stage's gradient buckets, as GradientBuckets groups them: in backward order (last layer
// first), and the layer whose backward completes each.
struct StageBucket {
    std::size_t bytes = 0;
    std::size_t completed_by = 0;  // top-level layer index
};
std::vector<StageBucket> stage_buckets(const ProgramSpec& spec, int stage);
std::vector<StageBucket> stage_buckets(const ProgramSpec& spec, const StageNode& stage);

// The stage graph the programs run: `graph`, or the chain of `bounds`.
StageGraph program_stage_graph(const ProgramSpec& spec);

// Whether stage `stage` recomputes its activations (recompute: none, one for all, or one each).
bool stage_recomputes(const ParallelOptions& parallel, int stage);
// Whether training reduces gradients over `replicas` copies of each stage (synchronous SGD
// with several), and whether it does so during the last backward, on a lane per stage
// (overlap_backward, unless deterministic mode or sync batch norm need the gradients whole).
bool reduces_gradients(const ParallelOptions& parallel, int replicas);
bool reduces_during_backward(const ParallelOptions& parallel, int replicas);
// Whether model averaging averages the replicas' weights after step `step` (0-based).
bool averages_after(const ParallelOptions& parallel, int replicas, std::int64_t step);

// Every device's program, index g * S + s. ConfigError for bounds or a graph that do not fit
// (check_stage_graph names the stage).
std::vector<DeviceProgram> build_programs(const ProgramSpec& spec);

}  // namespace tandem

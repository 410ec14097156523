// Stage costs: what each top-level layer of a net costs per micro-batch (time, memory), and
// what a contiguous run of layers costs as one pipeline stage under a schedule. The
// partitioner weighs candidate splits with it; `format_partition` prints it.
//
// Memory of stage s = layers [b, e), with M micro-batches and S stages:
//
//   weights     = sum of parameter bytes of its layers
//   gradients   = weights                      (one gradient per parameter, accumulated)
//   optimizer   = sum of optimizer state bytes (SGD momentum: = weights; Adam: twice them)
//   activations = F(s) x A(b, e)               without recomputation
//               = F(s) x I(b) + A(b, e) - I(b)  with recomputation
//
// where A(b, e) = sum over the stage's layers of (input bytes + saved bytes) is what one
// micro-batch leaves behind for backward, I(b) is the stage's boundary input (the input of
// layer b) and F(s) is the number of micro-batches in flight at the stage:
//
//   GPipe (fill-drain): F(s) = M               every forward runs before any backward
//   1F1B:               F(s) = min(M, S - s)   stage s (0-based) starts backward after S - s
//
// With recomputation a stage keeps only the boundary input of each micro-batch in flight and
// rebuilds one micro-batch's activations at a time for its backward, so it holds the F(s)
// inputs plus the rest of one micro-batch's activations.
//
// Not counted: the stage's own output (handed to the transfer, held by the next stage),
// transient gradients and kernel workspaces, and the allocator's cache. Caps should leave
// room for them.
//
// Time of a stage = sum of forward + backward ms of its layers, plus its forward ms again
// when it recomputes (backward replays the forward first).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "parallel/schedule.h"
#include "plan/profiler.h"

namespace tandem {

// One top-level layer's cost for one micro-batch.
struct LayerCost {
    std::string name;
    double forward_ms = 0;
    double backward_ms = 0;
    std::size_t parameter_bytes = 0;  // weights; gradients are as large
    // Each parameter tensor's bytes (they sum to parameter_bytes), for the gradient buckets;
    // empty: one tensor of parameter_bytes.
    std::vector<std::size_t> parameter_tensor_bytes;
    std::size_t optimizer_bytes = 0;  // optimizer state (momentum buffers)
    std::size_t input_bytes = 0;      // its inputs kept for backward that no layer before it keeps
    std::size_t saved_bytes = 0;      // what else it keeps for backward (masks, indices, ...)
    std::size_t output_bytes = 0;     // its output: what a transfer after it moves
    std::size_t workspace_bytes = 0;  // scratch its forward or backward needs while it runs

    double time_ms() const { return forward_ms + backward_ms; }
    // Each parameter tensor's bytes: the list, or one tensor of parameter_bytes (none without).
    std::vector<std::size_t> tensor_bytes() const {
        if (!parameter_tensor_bytes.empty() || parameter_bytes == 0) return parameter_tensor_bytes;
        return {parameter_bytes};
    }
    std::size_t activation_bytes() const { return input_bytes + saved_bytes; }
};

// The cost table of a profile taken at the micro-batch size. `optimizer_buffers`: the
// parameter-sized state tensors the optimizer keeps (OptimizerOptions::state_buffers).
std::vector<LayerCost> layer_costs(const NetProfile& profile, int optimizer_buffers);

struct StageMemory {
    std::size_t weights = 0;
    std::size_t gradients = 0;
    std::size_t optimizer = 0;
    std::size_t activations = 0;

    std::size_t total() const { return weights + gradients + optimizer + activations; }
};

// Prefix sums over a cost table: the time and memory of any run of layers in O(1).
class StageCosts {
public:
    explicit StageCosts(const std::vector<LayerCost>& layers);

    std::size_t size() const { return layers_; }
    // Layers [begin, end), begin < end <= size().
    double time_ms(std::size_t begin, std::size_t end, bool recompute) const;
    StageMemory memory(std::size_t begin, std::size_t end, int in_flight, bool recompute) const;

private:
    std::size_t layers_ = 0;
    // Entry i: the sum over layers [0, i).
    std::vector<double> forward_, backward_;
    std::vector<std::size_t> parameters_, optimizer_, activations_;
    std::vector<std::size_t> inputs_;  // entry i: layer i's input bytes
};

}  // namespace tandem

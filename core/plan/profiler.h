// Profiler: measured forward and backward time of each top-level layer of a net on a device
// (or of each unit of a placement: a graph's nodes, parallel/unit_placement.h), and of the
// whole training step. `tandem bench` prints it; the partitioner and the planner weigh layers
// with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "layers/loss.h"
#include "layers/sequential.h"
#include "parallel/unit_placement.h"

namespace tandem {

struct LayerProfile {
    std::string name, kind, options;
    Shape output;
    std::int64_t parameters = 0;
    double forward_ms = 0;  // over the timed iterations (ProfileOptions::quantile: the median)
    double backward_ms = 0;
    double flops = 0;  // forward floating-point operations for the whole batch
    MemoryEstimate memory;
    // each parameter tensor (parameter_tensor_bytes())
    std::vector<std::size_t> parameter_tensor_bytes;
    // Memory its forward or backward needed at its peak beyond what was in use before or
    // after it (its output or gradients, kernel workspaces, layout reorders), measured.
    std::size_t transient_bytes = 0;
    // Its inputs' bytes that no unit before it keeps already (UnitPlacement::first_reads): what
    // it holds for backward besides memory.saved_bytes.
    std::size_t kept_input_bytes = 0;
};

struct NetProfile {
    std::vector<LayerProfile> layers;  // per top-level layer, or per unit in the placement's order
    std::int64_t batch = 0;
    Shape input;             // the batch's input shape (batch x C x H x W): the first layer's input
    double step_ms = 0;      // whole step: forward, loss, backward, SGD update
    double update_ms = 0;    // SGD update alone
    double train_flops = 0;  // per step: 3 x forward flops (forward, backward data, weights)
    std::size_t peak_bytes = 0;  // device memory peak during a step
};

// ProfileOptions::after_step: the moment the next step is timed from.
using StepEnd = std::function<std::chrono::steady_clock::time_point()>;

struct ProfileOptions {
    int warmup = 3;
    int iterations = 10;
    Layout layout = Layout::contiguous;
    std::uint64_t seed = 1;
    std::int64_t classes = 0;  // labels drawn in [0, classes); 0: the net's output width
    // Which quantile of the timed iterations each time is: 0.5 the median; lower to estimate
    // the undisturbed time on a machine other work shares (that work only ever adds time).
    double quantile = 0.5;
    // Called at the end of every step (warm-up ones too), inside its timed span: profiles run
    // on several threads at once pass a barrier here, so that each step lasts as long as the
    // slowest thread's, as in the engine. It returns the moment the barrier let the threads go,
    // which the next step is timed from: a thread's own clock would start only once it has a
    // core again, and with more threads than cores that leaves out the time slice the late
    // ones waited (four one-thread profiles on two cores came out 8-12% below their rounds).
    StepEnd after_step;
};

// `input` is one sample's shape (C x H x W); the batch is `batch` samples of random data.
// Runs on the device's worker thread.
NetProfile profile_net(Sequential& net, Loss& loss, Device& device, const Shape& input,
                       std::int64_t batch, const ProfileOptions& options = {});
// Per unit of `placed` (a placement of `net`), in its order.
NetProfile profile_net(Sequential& net, const UnitPlacement& placed, Loss& loss, Device& device,
                       const Shape& input, std::int64_t batch, const ProfileOptions& options = {});

}  // namespace tandem

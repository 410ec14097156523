// Sgd: stochastic gradient descent with momentum, Nesterov momentum and weight decay, exactly
// as PyTorch's torch.optim.SGD defines them (see TensorOpsKernel::sgd_update in kernels.h):
//
//   g = grad + weight_decay * w          (no decay for parameters with decay = false)
//   buf = g on the first step, then buf = momentum * buf + (1 - dampening) * g
//   d = nesterov ? g + momentum * buf : buf          (d = g without momentum)
//   w -= lr * d
//
// The learning rate comes with each step (from a Schedule), not from the options, so a
// schedule and a resumed run agree on every step's rate. Momentum buffers are the only state;
// they are kept by parameter name, so the optimizer works on any set of parameters (a whole
// net, or the slice a pipeline stage holds) and its state survives a checkpoint round trip.
// Workers may call step() at once on disjoint parameter sets (each stage steps its own slice);
// the buffer map is locked, the updates run unlocked on each parameter's device.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "layers/layer.h"

namespace tandem {

struct SgdOptions {
    float lr = 0.01f, momentum = 0.f, dampening = 0.f, weight_decay = 0.f;
    bool nesterov = false;
};

class Sgd {
public:
    // ConfigError on a negative or non-finite lr, momentum or weight decay, a dampening outside
    // [0, 1], or Nesterov momentum without momentum or with dampening (PyTorch's rules).
    explicit Sgd(const SgdOptions& options);

    const SgdOptions& options() const { return options_; }

    // One step at learning rate `lr` over `params` (from named_parameters(net)). Parameters
    // without a gradient tensor (buffers) are skipped. Momentum buffers are created on first
    // use on the parameter's device, in its layout, and follow the parameter when it moves.
    void step(const std::vector<NamedParameter>& params, float lr);

    // Sets every gradient in `params` to zero.
    static void zero_grad(const std::vector<NamedParameter>& params);

    // The optimizer's state for checkpoints: one "momentum.<param name>" tensor per momentum
    // buffer, sorted by name (empty before the first step or without momentum).
    std::vector<std::pair<std::string, Tensor>> state() const;

    // Restores state() output for `params`, placing buffers on each parameter's device. An empty
    // state means "no step taken yet" and clears the buffers. Otherwise every trainable
    // parameter needs its entry (with momentum): DataError on a missing entry, an entry of the
    // wrong shape or type, or an entry that names no parameter.
    void load_state(const std::vector<std::pair<std::string, Tensor>>& state,
                    const std::vector<NamedParameter>& params);

    static constexpr const char* kMomentumPrefix = "momentum.";

private:
    // The buffer for `name`, created (and `created` set) on first use; it is placed on
    // `value`'s device and layout. Locks the map only: std::map nodes never move.
    Tensor& momentum_buffer(const std::string& name, const Tensor& value, bool& created);

    SgdOptions options_;
    mutable std::mutex mutex_;
    std::map<std::string, Tensor> momentum_;
};

}  // namespace tandem

// Sgd: stochastic gradient descent with momentum, Nesterov momentum and weight decay, exactly
// as PyTorch's torch.optim.SGD defines them (see TensorOpsKernel::sgd_update in kernels.h):
//
//   g = grad + weight_decay * w          (no decay for parameters with decay = false)
//   buf = g on the first step, then buf = momentum * buf + (1 - dampening) * g
//   d = nesterov ? g + momentum * buf : buf          (d = g without momentum)
//   w -= lr * d
//
// Its state is one "momentum" slot per parameter (none without momentum).
#pragma once

#include "optim/optimizer.h"

namespace tandem {

class Sgd final : public Optimizer {
public:
    // ConfigError on a negative or non-finite lr, momentum or weight decay, a dampening outside
    // [0, 1], or Nesterov momentum without momentum or with dampening (PyTorch's rules).
    explicit Sgd(const SgdOptions& options);

    const SgdOptions& options() const { return options_; }

private:
    void update(const std::string& name, Parameter& param, float lr) override;

    SgdOptions options_;
};

}  // namespace tandem

// Adam and AdamW, exactly as PyTorch's torch.optim.Adam and AdamW define them (single-tensor
// form; see TensorOpsKernel::adam_update in kernels.h). Per parameter, at its t-th step:
//
//   Adam:  g = grad + weight_decay * w          AdamW:  w *= 1 - lr * weight_decay;  g = grad
//   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g^2
//   w -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
//
// Parameters with decay = false (biases, batch-norm affine) take no weight decay. Its state is
// three slots per parameter: "exp_avg" (m), "exp_avg_sq" (v) and "step" (t, one float, as
// PyTorch keeps it), so a stage's parameters may have taken different numbers of steps.
#pragma once

#include "optim/optimizer.h"

namespace tandem {

class Adam final : public Optimizer {
public:
    // ConfigError (naming Adam or AdamW and the option) on a negative or non-finite lr, betas
    // outside [0, 1), eps <= 0 or a negative weight decay.
    explicit Adam(const AdamOptions& options);

    const AdamOptions& options() const { return options_; }

private:
    void update(const std::string& name, Parameter& param, float lr) override;

    AdamOptions options_;
};

}  // namespace tandem

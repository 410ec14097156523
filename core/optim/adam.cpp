#include "optim/adam.h"

#include <cmath>

#include "device/device.h"
#include "kernels/kernel_cache.h"

namespace tandem {

Adam::Adam(const AdamOptions& o)
    : Optimizer(o.decoupled ? "AdamW" : "Adam", {{"exp_avg"}, {"exp_avg_sq"}, {"step", false}}),
      options_(o) {
    TANDEM_CHECK_AS(ConfigError, std::isfinite(o.lr) && o.lr >= 0)
        << name() << ": invalid learning rate " << o.lr << " (must be >= 0)";
    TANDEM_CHECK_AS(ConfigError, std::isfinite(o.beta1) && o.beta1 >= 0 && o.beta1 < 1)
        << name() << ": invalid beta1 " << o.beta1 << " (betas must be in [0, 1))";
    TANDEM_CHECK_AS(ConfigError, std::isfinite(o.beta2) && o.beta2 >= 0 && o.beta2 < 1)
        << name() << ": invalid beta2 " << o.beta2 << " (betas must be in [0, 1))";
    // eps keeps the step finite where v is 0 (a parameter whose gradient has been zero).
    TANDEM_CHECK_AS(ConfigError, std::isfinite(o.eps) && o.eps > 0)
        << name() << ": invalid eps " << o.eps << " (must be > 0)";
    TANDEM_CHECK_AS(ConfigError, std::isfinite(o.weight_decay) && o.weight_decay >= 0)
        << name() << ": invalid weight_decay " << o.weight_decay << " (must be >= 0)";
}

void Adam::update(const std::string& name, Parameter& param, float lr) {
    bool created = false;
    Tensor& exp_avg = slot("exp_avg", name, param.value, created);
    Tensor& exp_avg_sq = slot("exp_avg_sq", name, param.value, created);
    Tensor& step = slot("step", name, param.value, created);
    // The count lives on the host; the bias corrections are worked out here, in double, as
    // PyTorch does in Python.
    float& t = step.data<float>()[0];
    t += 1;
    AdamHyper hyper;
    hyper.lr = lr;
    hyper.beta1 = options_.beta1, hyper.beta2 = options_.beta2, hyper.eps = options_.eps;
    hyper.weight_decay = param.decay ? options_.weight_decay : 0.f;
    hyper.decoupled = options_.decoupled;
    hyper.step_size =
        static_cast<float>(double(lr) / (1.0 - std::pow(double(options_.beta1), double(t))));
    hyper.bias_correction2_sqrt =
        static_cast<float>(std::sqrt(1.0 - std::pow(double(options_.beta2), double(t))));
    tensor_ops(param.value.device())
        .adam_update(param.value, param.grad, exp_avg, exp_avg_sq, hyper);
}

}  // namespace tandem

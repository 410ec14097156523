#include "optim/sgd.h"

#include <cmath>

#include "device/device.h"
#include "kernels/kernel_cache.h"

namespace tandem {
Sgd::Sgd(const SgdOptions& o)
    : Optimizer("SGD", o.momentum != 0 ? std::vector<Slot>{{"momentum"}} : std::vector<Slot>{}),
      options_(o) {
    TANDEM_CHECK_AS(ConfigError, std::isfinite(o.lr) && o.lr >= 0)
        << "SGD: invalid learning rate " << o.lr << " (must be >= 0)";
    // Momentum 1 or more makes the velocity grow without bound: training diverges.
    TANDEM_CHECK_AS(ConfigError, std::isfinite(o.momentum) && o.momentum >= 0 && o.momentum < 1)
        << "SGD: invalid momentum " << o.momentum << " (must be in [0, 1))";
    TANDEM_CHECK_AS(ConfigError, std::isfinite(o.dampening) && o.dampening >= 0 && o.dampening <= 1)
        << "SGD: invalid dampening " << o.dampening << " (must be in [0, 1])";
    TANDEM_CHECK_AS(ConfigError, std::isfinite(o.weight_decay) && o.weight_decay >= 0)
        << "SGD: invalid weight_decay " << o.weight_decay << " (must be >= 0)";
    TANDEM_CHECK_AS(ConfigError, !o.nesterov || (o.momentum > 0 && o.dampening == 0))
        << "SGD: Nesterov momentum needs momentum > 0 and zero dampening (momentum " << o.momentum
        << ", dampening " << o.dampening << ")";
}

void Sgd::update(const std::string& name, Parameter& param, float lr) {
    const SgdHyper hyper{lr, options_.momentum, options_.dampening,
                         param.decay ? options_.weight_decay : 0.f, options_.nesterov};
    Tensor no_buffer;
    bool first_step = false;
    Tensor& buffer =
        options_.momentum != 0 ? slot("momentum", name, param.value, first_step) : no_buffer;
    tensor_ops(param.value.device()).sgd_update(param.value, param.grad, buffer, hyper, first_step);
}

}  // namespace tandem

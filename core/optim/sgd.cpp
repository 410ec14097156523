#include "optim/sgd.h"

#include <cmath>
#include <set>

#include "device/device.h"
#include "layers/kernel_cache.h"

namespace tandem {
namespace {

bool trainable(const NamedParameter& p) { return p.parameter && p.parameter->grad.defined(); }

// A momentum buffer on the parameter's device and in its layout: parameters move to their
// device after the optimizer may have loaded state on the host.
Tensor placed_like(const Tensor& buffer, const Tensor& value) {
    Tensor out = buffer;
    if (&out.device() != &value.device()) out = out.to(value.device());
    if (out.layout() != value.layout()) out = out.to_layout(value.layout());
    return out;
}

}  // namespace

Sgd::Sgd(const SgdOptions& o) : options_(o) {
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

void Sgd::step(const std::vector<NamedParameter>& params, float lr) {
    TANDEM_CHECK_AS(ConfigError, std::isfinite(lr) && lr >= 0)
        << "SGD: invalid learning rate " << lr << " for this step (must be >= 0)";
    for (const auto& p : params) {
        if (!trainable(p)) continue;
        Parameter& param = *p.parameter;
        const SgdHyper hyper{lr, options_.momentum, options_.dampening,
                             param.decay ? options_.weight_decay : 0.f, options_.nesterov};
        Tensor no_buffer;
        bool first_step = false;
        Tensor& buffer =
            options_.momentum != 0 ? momentum_buffer(p.name, param.value, first_step) : no_buffer;
        try {
            tensor_ops(param.value.device())
                .sgd_update(param.value, param.grad, buffer, hyper, first_step);
        } catch (Error& e) {
            e.add_context("in the SGD step of parameter '" + p.name + "'");
            throw;
        }
    }
}

Tensor& Sgd::momentum_buffer(const std::string& name, const Tensor& value, bool& created) {
    std::lock_guard lock(mutex_);
    auto it = momentum_.find(name);
    created = it == momentum_.end();
    if (created) {
        // Allocated before it enters the map, so a refused allocation leaves no empty entry.
        Tensor buffer = Tensor::empty(value.shape(), value.device(), DType::f32, value.layout());
        return momentum_.emplace(name, std::move(buffer)).first->second;
    }
    TANDEM_CHECK_AS(ShapeError, it->second.shape() == value.shape())
        << "SGD: parameter '" << name << "' is " << value.description()
        << " but its momentum buffer is " << it->second.description();
    it->second = placed_like(it->second, value);
    return it->second;
}

void Sgd::zero_grad(const std::vector<NamedParameter>& params) {
    for (const auto& p : params)
        if (trainable(p)) tensor_ops(p.parameter->grad.device()).fill(p.parameter->grad, 0.f);
}

std::vector<std::pair<std::string, Tensor>> Sgd::state() const {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::string, Tensor>> out;
    for (const auto& [name, buffer] : momentum_) out.emplace_back(kMomentumPrefix + name, buffer);
    return out;
}

void Sgd::load_state(const std::vector<std::pair<std::string, Tensor>>& state,
                     const std::vector<NamedParameter>& params) {
    std::map<std::string, Tensor> loaded;
    if (state.empty()) {
        std::lock_guard lock(mutex_);
        momentum_.clear();
        return;
    }
    std::map<std::string, const Tensor*> entries;
    for (const auto& [name, tensor] : state) {
        TANDEM_CHECK_AS(DataError, entries.emplace(name, &tensor).second)
            << "SGD state: duplicate entry '" << name << "'";
    }
    std::set<std::string> used;
    if (options_.momentum != 0) {
        for (const auto& p : params) {
            if (!trainable(p)) continue;
            const std::string key = kMomentumPrefix + p.name;
            auto it = entries.find(key);
            TANDEM_CHECK_AS(DataError, it != entries.end())
                << "SGD state: no entry '" << key << "' for parameter " << p.name;
            const Tensor& t = *it->second;
            const Tensor& value = p.parameter->value;
            TANDEM_CHECK_AS(DataError, t.shape() == value.shape() && t.dtype() == DType::f32)
                << "SGD state: entry '" << key << "' is " << t.description() << ", parameter "
                << p.name << " is " << value.description();
            Tensor buffer =
                Tensor::empty(value.shape(), value.device(), DType::f32, value.layout());
            buffer.copy_from(t);
            loaded.emplace(p.name, std::move(buffer));
            used.insert(key);
        }
    }
    for (const auto& [name, tensor] : entries) {
        TANDEM_CHECK_AS(DataError, used.count(name))
            << "SGD state: entry '" << name << "' (" << tensor->description()
            << ") matches no trainable parameter"
            << (options_.momentum == 0 ? " (this optimizer has no momentum)" : "");
    }
    std::lock_guard lock(mutex_);
    momentum_ = std::move(loaded);
}

}  // namespace tandem

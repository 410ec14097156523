#include "optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "device/device.h"
#include "kernels/kernel_cache.h"
#include "optim/adam.h"
#include "optim/sgd.h"

namespace tandem {
namespace {

bool trainable(const NamedParameter& p) {
    return p.parameter && p.parameter->grad.defined();
}

// A slot on its parameter's device and in its layout: parameters move to their device after
// the optimizer may have loaded state on the host.
Tensor placed_like(const Tensor& slot, const Tensor& value) {
    Tensor out = slot;
    if (&out.device() != &value.device()) out = out.to(value.device());
    if (out.layout() != value.layout()) out = out.to_layout(value.layout());
    return out;
}

Shape slot_shape(bool per_element, const Tensor& value) {
    return per_element ? value.shape() : Shape({1});
}

// A new (uninitialised) slot tensor for `value`: like it, or one float on the host.
Tensor new_slot(bool per_element, const Tensor& value) {
    return per_element ? Tensor::empty(value.shape(), value.device(), DType::f32, value.layout())
                       : Tensor::empty({1}, host_device(), DType::f32);
}

}  // namespace

int OptimizerOptions::state_buffers() const {
    if (kind == OptimizerKind::adam) return 2;
    return sgd.momentum != 0 ? 1 : 0;
}

std::string OptimizerOptions::description() const {
    std::ostringstream out;
    if (kind == OptimizerKind::sgd) {
        out << "SGD(lr " << sgd.lr << ", momentum " << sgd.momentum;
        if (sgd.dampening != 0) out << ", dampening " << sgd.dampening;
        out << ", weight_decay " << sgd.weight_decay << (sgd.nesterov ? ", nesterov" : "");
    } else {
        out << (adam.decoupled ? "AdamW" : "Adam") << "(lr " << adam.lr << ", betas (" << adam.beta1
            << ", " << adam.beta2 << "), eps " << adam.eps << ", weight_decay "
            << adam.weight_decay;
    }
    if (clip_norm > 0) out << ", clip_norm " << clip_norm;
    out << ")";
    return out.str();
}

Optimizer::Optimizer(std::string name, std::vector<Slot> slots)
    : name_(std::move(name)), slots_(std::move(slots)) {}

void Optimizer::step(const std::vector<NamedParameter>& params, float lr) {
    TANDEM_CHECK_AS(ConfigError, std::isfinite(lr) && lr >= 0)
        << name_ << ": invalid learning rate " << lr << " for this step (must be >= 0)";
    for (const auto& p : params) {
        if (!trainable(p)) continue;
        try {
            update(p.name, *p.parameter, lr);
        } catch (Error& e) {
            e.add_context("in the " + name_ + " step of parameter '" + p.name + "'");
            throw;
        }
    }
}

Tensor& Optimizer::slot(const std::string& slot, const std::string& name, const Tensor& value,
                        bool& created) {
    const auto declared =
        std::find_if(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.name == slot; });
    TANDEM_CHECK(declared != slots_.end())
        << name_ << " uses a state slot it did not declare: " << slot;
    const bool per_element = declared->per_element;
    const std::string key = slot + "." + name;
    std::lock_guard lock(mutex_);
    auto it = state_.find(key);
    created = it == state_.end();
    if (created) {
        // Allocated before it enters the map, so a refused allocation leaves no empty entry.
        Tensor t = new_slot(per_element, value);
        tensor_ops(t.device()).fill(t, 0.f);
        return state_.emplace(key, std::move(t)).first->second;
    }
    TANDEM_CHECK_AS(ShapeError, it->second.shape() == slot_shape(per_element, value))
        << name_ << ": parameter '" << name << "' is " << value.description() << " but its " << slot
        << " state is " << it->second.description();
    if (per_element) it->second = placed_like(it->second, value);
    return it->second;
}

void Optimizer::zero_grad(const std::vector<NamedParameter>& params) {
    for (const auto& p : params)
        if (trainable(p)) tensor_ops(p.parameter->grad.device()).fill(p.parameter->grad, 0.f);
}

std::vector<std::pair<std::string, Tensor>> Optimizer::state() const {
    std::lock_guard lock(mutex_);
    return {state_.begin(), state_.end()};
}

void Optimizer::load_state(const std::vector<std::pair<std::string, Tensor>>& state,
                           const std::vector<NamedParameter>& params) {
    if (state.empty()) {
        std::lock_guard lock(mutex_);
        state_.clear();
        return;
    }
    std::map<std::string, const Tensor*> entries;
    for (const auto& [name, tensor] : state) {
        TANDEM_CHECK_AS(DataError, entries.emplace(name, &tensor).second)
            << name_ << " state: duplicate entry '" << name << "'";
    }
    std::string slots;
    for (const Slot& s : slots_) slots += (slots.empty() ? "" : ", ") + s.name;
    const std::string keeps = slots.empty() ? name_ + " keeps none" : name_ + " keeps " + slots;
    // Another optimizer's state (a checkpoint saved with Adam, loaded with SGD) is said as such.
    for (const auto& [name, tensor] : entries) {
        const std::string slot = name.substr(0, name.find('.'));
        const bool known = std::any_of(slots_.begin(), slots_.end(),
                                       [&](const Slot& s) { return s.name == slot; });
        TANDEM_CHECK_AS(DataError, known)
            << name_ << " state: entry '" << name << "' is not " << name_ << "'s (" << keeps
            << "): was it saved with another optimizer?";
    }
    std::map<std::string, Tensor> loaded;
    for (const auto& p : params) {
        if (!trainable(p)) continue;
        const Tensor& value = p.parameter->value;
        for (const Slot& s : slots_) {
            const std::string key = s.name + "." + p.name;
            auto it = entries.find(key);
            TANDEM_CHECK_AS(DataError, it != entries.end())
                << name_ << " state: no entry '" << key << "' for parameter " << p.name;
            const Tensor& t = *it->second;
            TANDEM_CHECK_AS(
                DataError, t.shape() == slot_shape(s.per_element, value) && t.dtype() == DType::f32)
                << name_ << " state: entry '" << key << "' is " << t.description() << ", parameter "
                << p.name << " is " << value.description();
            Tensor copy = new_slot(s.per_element, value);
            copy.copy_from(t);
            loaded.emplace(key, std::move(copy));
        }
    }
    for (const auto& [name, tensor] : entries) {
        TANDEM_CHECK_AS(DataError, loaded.count(name))
            << name_ << " state: entry '" << name << "' (" << tensor->description()
            << ") matches no trainable parameter";
    }
    std::lock_guard lock(mutex_);
    state_ = std::move(loaded);
}

double clip_factor(double norm, float clip_norm) {
    return std::min(1.0, double(clip_norm) / (norm + 1e-6));
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& o) {
    TANDEM_CHECK_AS(ConfigError, std::isfinite(o.clip_norm) && o.clip_norm >= 0)
        << "optimizer: invalid clip_norm " << o.clip_norm << " (must be > 0, or 0 for no clipping)";
    if (o.kind == OptimizerKind::adam) return std::make_unique<Adam>(o.adam);
    return std::make_unique<Sgd>(o.sgd);
}

}  // namespace tandem

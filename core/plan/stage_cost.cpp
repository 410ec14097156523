#include "plan/stage_cost.h"

#include <algorithm>

#include "base/error.h"

namespace tandem {

std::vector<LayerCost> layer_costs(const NetProfile& profile, int optimizer_buffers) {
    std::vector<LayerCost> costs;
    costs.reserve(profile.layers.size());
    for (const auto& lp : profile.layers) {
        LayerCost c;
        c.name = lp.name;
        c.forward_ms = lp.forward_ms;
        c.backward_ms = lp.backward_ms;
        c.parameter_bytes = lp.memory.parameter_bytes;
        c.parameter_tensor_bytes = lp.parameter_tensor_bytes;
        c.optimizer_bytes = static_cast<std::size_t>(optimizer_buffers) * lp.memory.parameter_bytes;
        c.input_bytes = lp.kept_input_bytes;
        c.saved_bytes = lp.memory.saved_bytes;
        c.output_bytes = lp.memory.output_bytes;
        c.workspace_bytes = lp.transient_bytes;
        costs.push_back(std::move(c));
    }
    return costs;
}

StageCosts::StageCosts(const std::vector<LayerCost>& layers)
    : layers_(layers.size()), forward_(layers.size() + 1, 0.0), backward_(layers.size() + 1, 0.0),
      parameters_(layers.size() + 1, 0), optimizer_(layers.size() + 1, 0),
      activations_(layers.size() + 1, 0) {
    inputs_.reserve(layers.size());
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const LayerCost& c = layers[i];
        TANDEM_CHECK_AS(ConfigError, c.forward_ms >= 0 && c.backward_ms >= 0)
            << "layer " << i + 1 << " '" << c.name << "' has a negative time (" << c.forward_ms
            << " ms forward, " << c.backward_ms << " ms backward)";
        forward_[i + 1] = forward_[i] + c.forward_ms;
        backward_[i + 1] = backward_[i] + c.backward_ms;
        parameters_[i + 1] = parameters_[i] + c.parameter_bytes;
        optimizer_[i + 1] = optimizer_[i] + c.optimizer_bytes;
        activations_[i + 1] = activations_[i] + c.activation_bytes();
        inputs_.push_back(c.input_bytes);
    }
}

double StageCosts::time_ms(std::size_t begin, std::size_t end, bool recompute) const {
    TANDEM_CHECK(begin < end && end <= layers_)
        << "stage layers [" << begin << ", " << end << ") out of " << layers_;
    const double forward = forward_[end] - forward_[begin];
    const double backward = backward_[end] - backward_[begin];
    return recompute ? 2 * forward + backward : forward + backward;
}

StageMemory StageCosts::memory(std::size_t begin, std::size_t end, int in_flight,
                               bool recompute) const {
    TANDEM_CHECK(begin < end && end <= layers_ && in_flight >= 1)
        << "stage layers [" << begin << ", " << end << ") out of " << layers_ << ", " << in_flight
        << " micro-batches in flight";
    StageMemory m;
    m.weights = parameters_[end] - parameters_[begin];
    m.gradients = m.weights;
    m.optimizer = optimizer_[end] - optimizer_[begin];
    const std::size_t one = activations_[end] - activations_[begin];
    const auto flying = static_cast<std::size_t>(in_flight);
    // A(b, e) includes I(b), so recomputation holds F x I(b) + (A(b, e) - I(b)).
    m.activations = recompute ? flying * inputs_[begin] + (one - inputs_[begin]) : flying * one;
    return m;
}

}  // namespace tandem

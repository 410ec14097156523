#include "plan/analytic_costs.h"

#include <algorithm>

#include "plan/hardware.h"

namespace tandem {
namespace {

// A device's attained rates, per millisecond.
double flops_per_ms(const DeviceModel& m) {
    return m.fp32_tflops * m.compute_fraction * 1e9;
}
double bytes_per_ms(const DeviceModel& m) {
    return m.bandwidth_gbs * m.bandwidth_fraction * 1e6;
}

// One layer's forward and backward ms for `batch` samples on `m`.
std::pair<double, double> roofline(const LayerShape& l, bool input_gradient, const DeviceModel& m,
                                   std::int64_t batch) {
    const auto b = static_cast<double>(batch);
    // Forward reads the input and weights and writes the output (and what it saves);
    // backward reads the gradient, the input and what was saved and writes the input's
    // gradient and the weights' gradient.
    const double moved = static_cast<double>(l.input_bytes + l.output_bytes + l.saved_bytes) * b +
                         static_cast<double>(l.parameter_bytes);
    const double forward = std::max(l.forward_flops * b / flops_per_ms(m), moved / bytes_per_ms(m));
    const double backward_flops = l.forward_flops * b * (input_gradient ? 2.0 : 1.0);
    const double backward = std::max(backward_flops / flops_per_ms(m), 2 * moved / bytes_per_ms(m));
    return {forward + l.kernels * m.launch_us / 1e3, backward + 2 * l.kernels * m.launch_us / 1e3};
}

}  // namespace

AnalyticCostModel::AnalyticCostModel(NetShapes shapes, bool momentum)
    : shapes_(std::move(shapes)), momentum_(momentum) {}

std::vector<LayerCost> AnalyticCostModel::layer_costs(const TopologyDevice& device,
                                                      std::int64_t batch) const {
    const DeviceModel& m = device_model(device.model);
    std::vector<LayerCost> costs;
    for (std::size_t i = 0; i < shapes_.layers.size(); ++i) {
        const LayerShape& l = shapes_.layers[i];
        const auto scale = static_cast<std::size_t>(batch);
        const auto [forward, backward] = roofline(l, i > 0, m, batch);
        LayerCost c;
        c.name = l.name;
        c.forward_ms = forward;
        c.backward_ms = backward;
        c.parameter_bytes = l.parameter_bytes;
        c.parameter_tensor_bytes = l.parameter_tensor_bytes;
        c.optimizer_bytes = momentum_ ? l.parameter_bytes : 0;
        c.input_bytes = l.kept_input_bytes * scale;
        c.saved_bytes = l.saved_bytes * scale;
        c.output_bytes = l.output_bytes * scale;
        // Backward holds the output's gradient and writes the input's.
        c.workspace_bytes = (l.input_bytes + l.output_bytes) * scale;
        costs.push_back(std::move(c));
    }
    share_whole_layers(costs, m, batch);
    return costs;
}

void AnalyticCostModel::share_whole_layers(std::vector<LayerCost>& costs, const DeviceModel& m,
                                           std::int64_t batch) const {
    // Each opened layer's parts: their own times, summed, then scaled to the whole's.
    std::vector<std::pair<double, double>> own(shapes_.whole.size());
    for (std::size_t i = 0; i < costs.size(); ++i)
        if (const int w = shapes_.layers[i].part_of; w >= 0) {
            own.at(static_cast<std::size_t>(w)).first += costs[i].forward_ms;
            own[static_cast<std::size_t>(w)].second += costs[i].backward_ms;
        }
    for (std::size_t i = 0; i < costs.size(); ++i) {
        const int w = shapes_.layers[i].part_of;
        if (w < 0) continue;
        const auto [forward, backward] =
            roofline(shapes_.whole[static_cast<std::size_t>(w)], w > 0, m, batch);
        const auto& [own_forward, own_backward] = own[static_cast<std::size_t>(w)];
        if (own_forward > 0) costs[i].forward_ms *= forward / own_forward;
        if (own_backward > 0) costs[i].backward_ms *= backward / own_backward;
    }
}

double AnalyticCostModel::loss_ms(const TopologyDevice& device, std::int64_t batch) const {
    const DeviceModel& m = device_model(device.model);
    // Softmax and cross-entropy forward, its gradient: three passes over the logits.
    const double bytes = 3.0 * static_cast<double>(batch * shapes_.classes) * sizeof(float);
    return bytes / bytes_per_ms(m) + 2 * m.launch_us / 1e3;
}

double AnalyticCostModel::update_ms(const TopologyDevice& device,
                                    std::size_t parameter_bytes) const {
    const DeviceModel& m = device_model(device.model);
    // SGD reads weight and gradient (and momentum) and writes the weight (and momentum).
    const double passes = momentum_ ? 5.0 : 3.0;
    return passes * static_cast<double>(parameter_bytes) / bytes_per_ms(m) + m.launch_us / 1e3;
}

}  // namespace tandem

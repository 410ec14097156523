#include "plan/cost_model.h"

#include <cmath>

#include "base/error.h"

namespace tandem {
namespace {

int leaf_count(Layer& layer) {
    const auto children = layer.children();
    if (children.empty()) return 1;
    int n = 0;
    for (Layer* child : children) n += leaf_count(*child);
    return n;
}

Shape with_batch(const Shape& sample, std::int64_t batch) {
    std::vector<std::int64_t> dims{batch};
    dims.insert(dims.end(), sample.dims().begin(), sample.dims().end());
    return Shape(dims);
}

std::size_t numel_bytes(const Shape& shape) { return static_cast<std::size_t>(shape.numel()) * sizeof(float); }

}  // namespace

std::size_t NetShapes::parameter_bytes() const {
    std::size_t total = 0;
    for (const auto& l : layers) total += l.parameter_bytes;
    return total;
}

double NetShapes::forward_flops() const {
    double total = 0;
    for (const auto& l : layers) total += l.forward_flops;
    return total;
}

NetShapes net_shapes(Sequential& net, const Shape& sample) {
    NetShapes shapes;
    shapes.sample = sample;
    Shape in = with_batch(sample, 1);
    const auto outs = net.output_shapes(in);
    for (std::size_t i = 0; i < net.size(); ++i) {
        Layer& layer = net.at(i);
        const MemoryEstimate m = layer.memory_estimate(in);
        LayerShape l;
        l.name = layer.name();
        l.kind = std::string(layer.kind());
        l.forward_flops = layer.forward_flops(in);
        l.parameter_bytes = m.parameter_bytes;
        l.parameter_tensor_bytes = parameter_tensor_bytes(layer);
        l.input_bytes = numel_bytes(in);
        l.output_bytes = m.output_bytes;
        l.saved_bytes = m.saved_bytes;
        l.kernels = leaf_count(layer);
        shapes.layers.push_back(std::move(l));
        in = outs[i];
    }
    TANDEM_CHECK_AS(ConfigError, !outs.empty()) << "the net has no layers to plan";
    shapes.classes = outs.back().numel();
    return shapes;
}

double CostModel::cpu_all_reduce_ms(std::size_t bytes, int ranks, ReduceAlgorithm algorithm) const {
    const double rate = copy_gbs() * 1e6;
    const double n = ranks;
    if (rate <= 0 || ranks < 2) return 0;
    if (algorithm == ReduceAlgorithm::ring)
        return 2 * (n - 1) * (1.5 * static_cast<double>(bytes) / n / rate + handoff_ms());
    const double levels = std::ceil(std::log2(n));
    return 2 * levels * (1.5 * static_cast<double>(bytes) / rate + handoff_ms());
}

}  // namespace tandem

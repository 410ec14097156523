#include "plan/cost_model.h"

#include <cmath>

#include "base/error.h"
#include "layers/merge.h"

namespace tandem {
namespace {

Shape with_batch(const Shape& sample, std::int64_t batch) {
    std::vector<std::int64_t> dims{batch};
    dims.insert(dims.end(), sample.dims().begin(), sample.dims().end());
    return Shape(dims);
}

std::size_t numel_bytes(const Shape& shape) {
    return static_cast<std::size_t>(shape.numel()) * sizeof(float);
}

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
    TANDEM_CHECK_AS(ConfigError, net.size() > 0) << "the net has no layers to plan";
    return net_shapes(net, sample, all_units(net));
}

NetShapes net_shapes(Sequential& net, const Shape& sample, const UnitPlacement& placed) {
    NetShapes shapes;
    shapes.sample = sample;
    // Each value's shape for one sample; the placement's order is a topological one.
    std::vector<Shape> value_shapes(placed.values);
    value_shapes[kBatchValue] = with_batch(sample, 1);
    const auto first_reads = placed.first_reads();
    for (std::size_t u = 0; u < placed.units.size(); ++u) {
        const NetUnit& unit = placed.units[u];
        Layer& layer = unit_layer(net, unit);
        std::vector<Shape> in;
        for (std::size_t v : unit.inputs) in.push_back(value_shapes[v]);
        const MemoryEstimate m = node_memory(layer, in);
        LayerShape l;
        l.name = unit.name;
        l.kind = std::string(layer.kind());
        l.forward_flops = node_flops(layer, in);
        l.parameter_bytes = m.parameter_bytes;
        l.parameter_tensor_bytes = parameter_tensor_bytes(layer);
        for (const Shape& shape : in) l.input_bytes += numel_bytes(shape);
        for (std::size_t v : first_reads[u]) l.kept_input_bytes += numel_bytes(value_shapes[v]);
        l.output_bytes = m.output_bytes;
        l.saved_bytes = m.saved_bytes;
        l.leaves = leaf_kernels(layer, in);
        shapes.layers.push_back(std::move(l));
        value_shapes[unit.value] = node_output_shape(layer, in);
    }
    shapes.classes = value_shapes[placed.loss_value].numel();
    return shapes;
}

StageGraph placement_graph(const UnitPlacement& placed, const NetShapes& shapes,
                           std::int64_t batch) {
    TANDEM_CHECK(shapes.layers.size() == placed.units.size())
        << shapes.layers.size() << " layer shapes for a placement of " << placed.units.size()
        << " units";
    // One sample's bytes of each value: the images', or its unit's output.
    std::vector<std::size_t> value_bytes(placed.values, numel_bytes(with_batch(shapes.sample, 1)));
    for (std::size_t u = 0; u < placed.units.size(); ++u)
        value_bytes[placed.units[u].value] = shapes.layers[u].output_bytes;
    StageGraph graph = placed.graph;
    for (StageEdge& edge : graph.edges)
        edge.bytes = value_bytes[placed.edge_values[static_cast<std::size_t>(edge.id)]] *
                     static_cast<std::size_t>(batch);
    return graph;
}

double CostModel::cpu_all_reduce_ms(std::size_t bytes, int ranks, ReduceAlgorithm algorithm) const {
    // Each step reads two buffers and writes one: 1.5 copies of its share.
    const double copy = cpu_copy_ms(bytes), n = ranks;
    if (copy <= 0 || ranks < 2) return 0;
    if (algorithm == ReduceAlgorithm::ring) return 2 * (n - 1) * (1.5 * copy / n + handoff_ms());
    const double levels = std::ceil(std::log2(n));
    return 2 * levels * (1.5 * copy + handoff_ms());
}

}  // namespace tandem

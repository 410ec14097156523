// Graph's shapes, bytes and FLOPs, from its inputs' shapes alone (no device, no allocation).
#include "layers/graph.h"
#include "layers/merge.h"

namespace tandem {

std::vector<Shape> Graph::node_shapes(const Node& node, const std::vector<Shape>& values) {
    std::vector<Shape> in;
    for (std::size_t v : node.inputs) in.push_back(values[v]);
    return in;
}

std::vector<Shape> Graph::value_shapes(const std::vector<Shape>& inputs) const {
    check_complete();
    TANDEM_CHECK_AS(ShapeError, inputs.size() == input_names_.size())
        << label() << " takes " << input_names_.size() << " input(s) (" << quoted_list(input_names_)
        << "), got " << inputs.size();
    std::vector<Shape> shapes = inputs;
    for (const auto& node : nodes_) {
        const std::vector<Shape> in = node_shapes(node, shapes);
        try {
            shapes.push_back(node_output_shape(*node.layer, in));
        } catch (Error& e) {
            std::string text;
            for (const auto& s : in) text += (text.empty() ? "" : ", ") + s.to_string();
            e.add_context("in node " + node.layer->label() + " of " + label() + ", input " + text);
            throw;
        }
    }
    return shapes;
}

std::vector<Shape> Graph::output_shapes(const std::vector<Shape>& inputs) const {
    const auto shapes = value_shapes(inputs);
    std::vector<Shape> out;
    for (std::size_t v : outputs_) out.push_back(shapes[v]);
    return out;
}

Shape Graph::output_shape(const Shape& input) const {
    check_one_in_one_out("a layer of a net");
    return output_shapes({input})[0];
}

MemoryEstimate Graph::memory_estimate(const Shape& input) const {
    check_one_in_one_out("a layer of a net");
    const auto shapes = value_shapes({input});
    MemoryEstimate total;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const Node& node = nodes_[i];
        const auto out_bytes =
            static_cast<std::size_t>(shapes[input_names_.size() + i].numel()) * sizeof(float);
        const MemoryEstimate e = node_memory(*node.layer, node_shapes(node, shapes));
        total.parameter_bytes += e.parameter_bytes;
        total.saved_bytes +=
            e.saved_bytes + out_bytes;  // each value is some node's input, kept for backward
    }
    total.output_bytes = static_cast<std::size_t>(shapes[outputs_[0]].numel()) * sizeof(float);
    return total;
}

double Graph::forward_flops(const Shape& input) const {
    check_one_in_one_out("a layer of a net");
    const auto shapes = value_shapes({input});
    double total = 0;
    for (const auto& node : nodes_) total += node_flops(*node.layer, node_shapes(node, shapes));
    return total;
}

}  // namespace tandem

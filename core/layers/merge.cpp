#include "layers/merge.h"

#include "kernels/kernel_cache.h"

namespace tandem {

void Merge::check_one_input() const {
    TANDEM_CHECK_AS(ConfigError, min_inputs() <= 1)
        << label() << " joins several inputs: use it as a node of an nn.Graph "
        << "(g:add(layer, input1, input2, ...)), not as a layer of a chain";
}

Shape Merge::output_shape(const Shape& input) const {
    check_one_input();
    return merged_shape({input});
}

Tensor Merge::forward(const Tensor& x, Pass& pass) {
    check_one_input();
    return merge({x}, pass);
}

Tensor Merge::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    check_one_input();
    return unmerge({x}, dy, pass).front();
}

MemoryEstimate Merge::memory_estimate(const Shape& input) const {
    check_one_input();
    return merged_memory({input});
}

double Merge::forward_flops(const Shape& input) const {
    check_one_input();
    return merged_flops({input});
}

Shape node_output_shape(const Layer& layer, const std::vector<Shape>& inputs) {
    const auto* merge = dynamic_cast<const Merge*>(&layer);
    return merge ? merge->merged_shape(inputs) : layer.output_shape(inputs.at(0));
}

MemoryEstimate node_memory(const Layer& layer, const std::vector<Shape>& inputs) {
    const auto* merge = dynamic_cast<const Merge*>(&layer);
    return merge ? merge->merged_memory(inputs) : layer.memory_estimate(inputs.at(0));
}

double node_flops(const Layer& layer, const std::vector<Shape>& inputs) {
    const auto* merge = dynamic_cast<const Merge*>(&layer);
    return merge ? merge->merged_flops(inputs) : layer.forward_flops(inputs.at(0));
}

MemoryEstimate Merge::merged_memory(const std::vector<Shape>& inputs) const {
    MemoryEstimate e;
    e.output_bytes = static_cast<std::size_t>(merged_shape(inputs).numel()) * sizeof(float);
    for (auto* p : const_cast<Merge*>(this)->parameters()) e.parameter_bytes += p->value.nbytes();
    return e;
}

double Merge::merged_flops(const std::vector<Shape>&) const {
    return 0;
}

void Merge::check_input_count(std::size_t n) const {
    const bool bounded = max_inputs() != std::numeric_limits<std::size_t>::max();
    TANDEM_CHECK_AS(ConfigError, n >= min_inputs() && n <= max_inputs())
        << label() << " takes " << (bounded ? "" : "at least ") << min_inputs()
        << (bounded && min_inputs() != max_inputs() ? " to " + std::to_string(max_inputs()) : "")
        << " inputs, got " << n;
}

void Merge::check_same_shapes(const std::vector<Shape>& inputs) const {
    check_input_count(inputs.size());
    for (std::size_t i = 1; i < inputs.size(); ++i)
        TANDEM_CHECK_AS(ShapeError, inputs[i] == inputs[0])
            << label() << ": input " << i + 1 << " is " << inputs[i].to_string()
            << " but input 1 is " << inputs[0].to_string() << "; " << kind()
            << " needs inputs of one shape";
}

std::vector<Shape> Merge::shapes_of(const std::vector<Tensor>& xs) {
    std::vector<Shape> shapes;
    for (const Tensor& x : xs) shapes.push_back(x.shape());
    return shapes;
}

std::vector<Tensor> Merge::in_first_layout(const std::vector<Tensor>& xs, Device& device) {
    std::vector<Tensor> out;
    for (const Tensor& x : xs) out.push_back(in_layout(x, xs.front().layout(), device));
    return out;
}

Shape Add::merged_shape(const std::vector<Shape>& inputs) const {
    check_same_shapes(inputs);
    return inputs.front();
}

Tensor Add::merge(const std::vector<Tensor>& xs, Pass& pass) {
    const Shape shape = merged_shape(shapes_of(xs));
    const auto same = in_first_layout(xs, pass.device);
    TensorOpsKernel& ops = tensor_ops(pass.device);
    Tensor y = Tensor::empty(shape, pass.device, DType::f32, same.front().layout());
    ops.add(same[0], same[1], y);
    for (std::size_t i = 2; i < same.size(); ++i) ops.accumulate(y, same[i]);
    return y;
}

std::vector<Tensor> Add::unmerge(const std::vector<Tensor>& xs, const Tensor& dy, Pass&) {
    return std::vector<Tensor>(xs.size(), dy);  // d(sum)/dx_i = 1
}

Shape Mul::merged_shape(const std::vector<Shape>& inputs) const {
    check_same_shapes(inputs);
    return inputs.front();
}

Tensor Mul::merge(const std::vector<Tensor>& xs, Pass& pass) {
    const Shape shape = merged_shape(shapes_of(xs));
    const auto same = in_first_layout(xs, pass.device);
    Tensor y = Tensor::empty(shape, pass.device, DType::f32, same.front().layout());
    tensor_ops(pass.device).multiply(same[0], same[1], y);
    return y;
}

std::vector<Tensor> Mul::unmerge(const std::vector<Tensor>& xs, const Tensor& dy, Pass& pass) {
    const auto same = in_first_layout(xs, pass.device);
    const Tensor g = in_layout(dy, same[0].layout(), pass.device);
    TensorOpsKernel& ops = tensor_ops(pass.device);
    std::vector<Tensor> dxs;
    for (std::size_t i = 0; i < 2; ++i) {
        Tensor dx = Tensor::empty(g.shape(), pass.device, DType::f32, g.layout());
        ops.multiply(g, same[1 - i], dx);  // d(a b)/da = b
        dxs.push_back(std::move(dx));
    }
    return dxs;
}

}  // namespace tandem

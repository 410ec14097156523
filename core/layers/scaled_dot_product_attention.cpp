#include "layers/scaled_dot_product_attention.h"

#include <cmath>
#include <sstream>

namespace tandem {
ScaledDotProductAttention::ScaledDotProductAttention(const ScaledDotProductAttentionOptions& o)
    : options_(o) {
    TANDEM_CHECK_AS(ConfigError, !o.scale || (std::isfinite(*o.scale) && *o.scale > 0))
        << "ScaledDotProductAttention: option scale must be a positive number, got " << *o.scale;
}

std::string ScaledDotProductAttention::options_text() const {
    std::ostringstream text;
    if (options_.scale)
        text << "scale " << *options_.scale;
    else
        text << "scale 1/sqrt(d)";
    if (options_.causal) text << ", causal";
    return text.str();
}

float ScaledDotProductAttention::scale_for(std::int64_t d) const {
    return options_.scale ? *options_.scale : 1.f / std::sqrt(static_cast<float>(d));
}

Shape ScaledDotProductAttention::merged_shape(const std::vector<Shape>& inputs) const {
    const std::string shapes = check_inputs(inputs);
    TANDEM_CHECK_AS(ShapeError, inputs[1][2] == inputs[0][2])
        << label() << ": queries have " << inputs[0][2] << " features but keys " << inputs[1][2]
        << "; they must be equal" << shapes;
    return output_of(inputs);
}

MemoryEstimate ScaledDotProductAttention::merged_memory(const std::vector<Shape>& inputs) const {
    MemoryEstimate e = Merge::merged_memory(inputs);
    // The weights, kept for backward (and for reading back).
    e.saved_bytes +=
        static_cast<std::size_t>(inputs[0][0] * inputs[0][1] * inputs[1][1]) * sizeof(float);
    return e;
}

double ScaledDotProductAttention::merged_flops(const std::vector<Shape>& inputs) const {
    const Shape out = merged_shape(inputs);
    const double scores = static_cast<double>(out[0] * out[1] * inputs[1][1]);
    return 2.0 * scores * static_cast<double>(inputs[0][2] + out[2]);
}

Tensor ScaledDotProductAttention::merge(const std::vector<Tensor>& xs, Pass& pass) {
    merged_shape(shapes_of(xs));
    Device& device = pass.device;
    const Tensor q = in_layout(xs[0], Layout::contiguous, device),
                 k = in_layout(xs[1], Layout::contiguous, device);
    const Tensor v = in_layout(values_of(xs), Layout::contiguous, device);
    const std::int64_t n = q.shape()[0], tq = q.shape()[1], tk = k.shape()[1], d = q.shape()[2];
    Tensor scores = Tensor::empty({n, tq, tk}, device);
    BatchedProduct p{n, tq, tk, d};
    p.transpose_b = true;
    p.alpha = scale_for(d);
    AttentionKernel& kernel = attention_kernel(device);
    kernel.batched_product(q, k, scores, p);
    if (options_.causal) kernel.mask_future(scores, n, tq, tk);
    const Tensor weights = softmax_over_keys(scores, device);
    if (pass.mode == Mode::train) pass.saved.put(this, {weights});
    return weighted_sum(weights, v, device);
}

std::vector<Tensor> ScaledDotProductAttention::unmerge(const std::vector<Tensor>& xs,
                                                       const Tensor& dy, Pass& pass) {
    const Shape out = merged_shape(shapes_of(xs));
    TANDEM_CHECK_AS(ShapeError, dy.shape() == out)
        << label() << ": gradient " << dy.shape().to_string() << " does not match the output "
        << out.to_string();
    const Tensor weights = pass.saved.get(this).at(0);
    pass.saved.erase(this);
    Device& device = pass.device;
    const Tensor q = in_layout(xs[0], Layout::contiguous, device),
                 k = in_layout(xs[1], Layout::contiguous, device);
    const Tensor v = in_layout(values_of(xs), Layout::contiguous, device);
    const Tensor g = in_layout(dy, Layout::contiguous, device);
    const std::int64_t n = q.shape()[0], tq = q.shape()[1], tk = k.shape()[1], d = q.shape()[2];
    const float scale = scale_for(d);
    const Tensor d_scores = scores_gradient(weights, v, g, device);
    AttentionKernel& kernel = attention_kernel(device);
    // dq = scale dS k, dk = scale dS^T q.
    Tensor dq = Tensor::empty(q.shape(), device), dk = Tensor::empty(k.shape(), device);
    BatchedProduct p{n, tq, d, tk};
    p.alpha = scale;
    kernel.batched_product(d_scores, k, dq, p);
    BatchedProduct pk{n, tk, d, tq};
    pk.transpose_a = true;
    pk.alpha = scale;
    kernel.batched_product(d_scores, q, dk, pk);
    return with_values_gradient(xs, weights, g, dq, dk, device);
}

}  // namespace tandem

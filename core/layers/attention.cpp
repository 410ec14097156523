#include "layers/attention.h"

namespace tandem {

AttentionKernel& Attention::attention_kernel(Device& device) {
    return kernels_.get(device, AttentionConfig{}, kernel_impl());
}

SoftmaxKernel& Attention::softmax(Device& device, std::int64_t rows, std::int64_t keys) {
    return softmaxes_.get(device, SoftmaxConfig{rows, keys, 1, false}, kernel_impl());
}

std::string Attention::check_inputs(const std::vector<Shape>& inputs) const {
    check_input_count(inputs.size());
    const bool three = inputs.size() > 2;
    const Shape& q = inputs[0];
    const Shape& k = inputs[1];
    const Shape& v = inputs.back();
    const std::string text =
        three ? " (query " + q.to_string() + ", key " + k.to_string() + ", value " + v.to_string() +
                    ")"
              : " (query " + q.to_string() + ", key and value " + k.to_string() + ")";
    const char* names[] = {"query", three ? "key" : "key and value", "value"};
    for (std::size_t i = 0; i < inputs.size(); ++i)
        TANDEM_CHECK_AS(ShapeError, inputs[i].rank() == 3 && inputs[i][1] >= 1 && inputs[i][2] >= 1)
            << label() << ": the " << names[i]
            << " must be N x steps x features (batch first), got " << inputs[i].to_string();
    TANDEM_CHECK_AS(ShapeError, k[0] == q[0] && v[0] == q[0])
        << label() << ": the inputs have different batch sizes" << text;
    TANDEM_CHECK_AS(ShapeError, v[1] == k[1]) << label() << ": " << k[1] << " keys but " << v[1]
                                              << " values; each key needs its value" << text;
    return text;
}

Tensor Attention::softmax_over_keys(const Tensor& scores, Device& device) {
    const Shape& s = scores.shape();
    Tensor weights = Tensor::empty(s, device);
    softmax(device, s[0] * s[1], s[2]).forward(scores, weights);
    weights_ = weights;
    return weights;
}

Tensor Attention::weighted_sum(const Tensor& weights, const Tensor& values, Device& device) {
    const std::int64_t n = weights.shape()[0], tq = weights.shape()[1], tk = weights.shape()[2];
    const std::int64_t dv = values.shape()[2];
    Tensor y = Tensor::empty({n, tq, dv}, device);
    attention_kernel(device).batched_product(weights, values, y, BatchedProduct{n, tq, dv, tk});
    return y;
}

Tensor Attention::scores_gradient(const Tensor& weights, const Tensor& values, const Tensor& dy,
                                  Device& device) {
    const std::int64_t n = weights.shape()[0], tq = weights.shape()[1], tk = weights.shape()[2];
    const std::int64_t dv = values.shape()[2];
    Tensor d_weights = Tensor::empty(weights.shape(), device);
    BatchedProduct p{n, tq, tk, dv};
    p.transpose_b = true;
    attention_kernel(device).batched_product(dy, values, d_weights, p);
    Tensor d_scores = Tensor::empty(weights.shape(), device);
    softmax(device, n * tq, tk).backward(weights, d_weights, d_scores);
    return d_scores;
}

std::vector<Tensor> Attention::with_values_gradient(const std::vector<Tensor>& xs,
                                                    const Tensor& weights, const Tensor& dy,
                                                    Tensor dq, Tensor dk, Device& device) {
    const std::int64_t n = weights.shape()[0], tq = weights.shape()[1], tk = weights.shape()[2];
    BatchedProduct p{n, tk, dy.shape()[2], tq};
    p.transpose_a = true;
    if (xs.size() == 2) {  // the keys are the values too
        p.accumulate = true;
        attention_kernel(device).batched_product(weights, dy, dk, p);
        return {dq, dk};
    }
    Tensor dv = Tensor::empty(values_of(xs).shape(), device);
    attention_kernel(device).batched_product(weights, dy, dv, p);
    return {dq, dk, dv};
}

}  // namespace tandem

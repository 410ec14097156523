#include "layers/attention.h"

namespace tandem {

AttentionKernel& Attention::attention_kernel(Device& device) {
    return kernels_.get(device, AttentionConfig{}, kernel_impl());
}

SoftmaxKernel& Attention::softmax(Device& device, std::int64_t rows, std::int64_t keys) {
    return softmaxes_.get(device, SoftmaxConfig{rows, keys, 1, false}, kernel_impl());
}

void Attention::check_sequence(const Shape& shape, const char* what) const {
    TANDEM_CHECK_AS(ShapeError, shape.rank() == 3 && shape[1] >= 1 && shape[2] >= 1)
        << label() << ": the " << what << " must be N x steps x features (batch first), got " << shape.to_string();
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

Tensor Attention::scores_gradient(const Tensor& weights, const Tensor& values, const Tensor& dy, Device& device) {
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

void Attention::values_gradient(const Tensor& weights, const Tensor& dy, Tensor& d_values, bool accumulate,
                                Device& device) {
    const std::int64_t n = weights.shape()[0], tq = weights.shape()[1], tk = weights.shape()[2];
    BatchedProduct p{n, tk, dy.shape()[2], tq};
    p.transpose_a = true;
    p.accumulate = accumulate;
    attention_kernel(device).batched_product(weights, dy, d_values, p);
}

}  // namespace tandem

#include "layers/embedding.h"

#include "base/rng.h"
#include "layers/init.h"

namespace tandem {

Embedding::Embedding(std::int64_t count, std::int64_t dim) : count_(count), dim_(dim) {
    TANDEM_CHECK_AS(ConfigError, count >= 1)
        << "Embedding: num_embeddings must be positive, got " << count;
    TANDEM_CHECK_AS(ConfigError, dim >= 1)
        << "Embedding: embedding_dim must be positive, got " << dim;
    weight_ = make_parameter("weight", {count, dim}, true);
    initialize(0);
}

std::string Embedding::options_text() const {
    return std::to_string(count_) + " x " + std::to_string(dim_);
}

void Embedding::initialize(std::uint64_t seed) {
    // N(0, 1): "kaiming" with a fan of 2 draws std sqrt(2 / 2) = 1.
    init_tensor(weight_.value, "kaiming", 2, dim_, rng_key(seed, "weight"));
}

Shape Embedding::output_shape(const Shape& input) const {
    TANDEM_CHECK_AS(ShapeError, input.rank() >= 1)
        << label() << ": the input has no batch dimension";
    std::vector<std::int64_t> dims = input.dims();
    dims.push_back(dim_);
    return Shape(dims);
}

EmbeddingKernel& Embedding::kernel(Device& device, std::int64_t count) {
    return kernels_.get(device, EmbeddingConfig{count, count_, dim_}, kernel_impl());
}

Tensor Embedding::forward(const Tensor& x, Pass& pass) {
    const Tensor ids = in_layout(x, Layout::contiguous, pass.device);
    Tensor y = Tensor::empty(output_shape(x.shape()), pass.device);
    kernel(pass.device, x.numel()).forward(ids, weight_.value, y);
    return y;
}

Tensor Embedding::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    TANDEM_CHECK_AS(ShapeError, dy.shape() == output_shape(x.shape()))
        << label() << ": gradient " << dy.shape().to_string() << " does not match the output "
        << output_shape(x.shape()).to_string();
    kernel(pass.device, x.numel())
        .backward(in_layout(x, Layout::contiguous, pass.device), dy, weight_.grad);
    if (!pass.need_dx) return Tensor();
    Tensor dx = Tensor::empty(x.shape(), pass.device, DType::f32, x.layout());
    tensor_ops(pass.device).fill(dx, 0);
    return dx;
}

}  // namespace tandem

// Embedding: a table of `count` vectors of `dim`, looked up by index (PyTorch's nn.Embedding):
// input N x ... of indices, output N x ... x dim. Indices are f32 whole numbers in
// [0, count), counted from 0 as class labels are (what the data pipeline delivers); a bad one
// is a DataError naming its position. The weight is drawn from N(0, 1) as PyTorch's. There is
// no gradient with respect to indices: backward returns zeros (when asked for one).
#pragma once

#include "kernels/kernel_cache.h"
#include "layers/layer.h"

namespace tandem {

class Embedding final : public Layer {
public:
    // Throws ConfigError when count or dim is below 1.
    Embedding(std::int64_t count, std::int64_t dim);
    std::string_view kind() const override { return "Embedding"; }
    LayerPtr clone() const override {
        return finish_clone(std::make_shared<Embedding>(count_, dim_));
    }
    std::string options_text() const override;

    Shape output_shape(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;
    std::vector<Parameter*> parameters() override { return {&weight_}; }
    void initialize(std::uint64_t seed) override;

private:
    EmbeddingKernel& kernel(Device& device, std::int64_t count);

    std::int64_t count_, dim_;
    Parameter weight_;
    KernelCache<EmbeddingKernel> kernels_;
};

}  // namespace tandem

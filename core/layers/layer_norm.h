// LayerNorm: each sample normalised over its trailing dimensions (PyTorch's nn.LayerNorm):
// y = (x - mean) / sqrt(var + eps) * weight + bias, the statistics over the last
// normalized_shape.size() dimensions, which must equal normalized_shape. weight (ones) and
// bias (zeros) have that shape; without elementwise_affine there are none. A channels_last
// input is normalised in the contiguous order and returned in its layout.
#pragma once

#include "kernels/kernel_cache.h"
#include "layers/layer.h"

namespace tandem {

class LayerNorm final : public Layer {
public:
    // Throws ConfigError for an empty shape, a size below 1 or eps <= 0.
    LayerNorm(std::vector<std::int64_t> normalized_shape, float eps, bool affine);
    std::string_view kind() const override { return "LayerNorm"; }
    LayerPtr clone() const override;
    std::string options_text() const override;

    // Throws ShapeError naming the layer when the trailing dimensions differ.
    Shape output_shape(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;
    std::vector<Parameter*> parameters() override;
    void initialize(std::uint64_t seed) override;

private:
    LayerNormKernel& kernel(Device& device, const Shape& input);

    std::vector<std::int64_t> shape_;
    float eps_;
    bool affine_;
    Parameter weight_, bias_;
    KernelCache<LayerNormKernel> kernels_;
};

}  // namespace tandem

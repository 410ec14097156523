// ReLU: y = max(x, 0). Keeps its output (not its input) for backward.
#pragma once

#include "layers/kernel_cache.h"
#include "layers/layer.h"

namespace tandem {

class ReLU final : public Layer {
public:
    std::string_view kind() const override { return "ReLU"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<ReLU>()); }
    Shape output_shape(const Shape& input) const override { return input; }
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;

protected:
    void on_bind(Device& device, const Shape& input, Layout layout) override;

private:
    ReluKernel& kernel(Device& device, const Shape& shape, Layout layout);
    KernelCache<ReluKernel> kernels_;
};

}  // namespace tandem

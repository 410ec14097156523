// LRN: local response normalisation across channels (AlexNet; PyTorch's LocalResponseNorm):
//   y_c = x_c / (k + alpha / size * sum_{c' in window(c)} x_c'^2) ^ beta
// with a window of `size` channels centred on c, clipped at the edges. Keeps its kernel's
// workspace (if any) in the pass's tape in training; a backward in evaluation recomputes it.
#pragma once

#include "kernels/kernel_cache.h"
#include "layers/layer.h"

namespace tandem {

struct LrnOptions {
    std::int64_t size = 5;
    float alpha = 1e-4f, beta = 0.75f, k = 1.f;
};

class LRN final : public Layer {
public:
    // Throws ConfigError for an even or non-positive size (a centred window needs an odd one,
    // as in Caffe), a negative alpha or beta, or k <= 0.
    explicit LRN(const LrnOptions& options = {});

    std::string_view kind() const override { return "LRN"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<LRN>(options_)); }
    Shape output_shape(const Shape& input) const override;
    MemoryEstimate memory_estimate(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;
    std::string options_text() const override;
    const LrnOptions& options() const { return options_; }

protected:
    void on_bind(Device& device, const Shape& input, Layout layout) override;

private:
    LrnKernel& kernel(Device& device, const Shape& shape, Layout layout);

    LrnOptions options_;
    KernelCache<LrnKernel> kernels_;
};

}  // namespace tandem

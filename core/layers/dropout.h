// Dropout: in training, zeroes each element with probability p and scales the kept ones by
// 1 / (1 - p) (inverted dropout, as PyTorch), so evaluation is the identity.
//
// The mask is drawn from the counter-based RNG: element i (its logical, NCHW row-major index)
// is kept when rng_uniform(key, i) >= p, with key = rng_key(pass.rng_key, name()). It is thus
// a pure function of (pass key, layer name, logical index): the same in either layout, on any
// backend and at any thread count, and a replay or recompute of the micro-batch redraws it
// exactly. The mask (u8, x's shape and layout) is kept in pass.saved for backward.
#pragma once

#include "kernels/kernel_cache.h"
#include "layers/layer.h"

namespace tandem {

class Dropout final : public Layer {
public:
    // Throws ConfigError unless 0 <= p < 1.
    explicit Dropout(float p);

    float p() const { return p_; }

    std::string_view kind() const override { return "Dropout"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<Dropout>(p_)); }
    Shape output_shape(const Shape& input) const override { return input; }
    MemoryEstimate memory_estimate(const Shape& input) const override;
    // Evaluation, or p == 0: returns x itself (no copy), and backward returns dy itself.
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;
    std::string options_text() const override;

protected:
    void on_bind(Device& device, const Shape& input, Layout layout) override;

private:
    DropoutKernel& kernel(Device& device, const Shape& shape);

    float p_;
    KernelCache<DropoutKernel> kernels_;
};

}  // namespace tandem

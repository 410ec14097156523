// Conv2d: 2-D convolution (cross-correlation, as every framework computes it) with optional
// groups and bias. Input N x C x H x W in either layout; output in the input's layout.
//
// Parameters: "weight" out x in/groups x kernel_h x kernel_w (decayed) and "bias" out (not
// decayed; absent when options.bias is false). Backward needs only its input, which the
// caller passes back, so forward keeps nothing on the tape.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/kernel_cache.h"
#include "layers/layer.h"

namespace tandem {

struct Conv2dOptions {
    std::int64_t in_channels = 0, out_channels = 0;
    std::int64_t kernel_h = 1, kernel_w = 1;
    std::int64_t stride_h = 1, stride_w = 1;
    std::int64_t pad_h = 0, pad_w = 0;
    std::int64_t groups = 1;
    bool bias = true;
    std::string init = "kaiming";  // see layers/init.h
};

class Conv2d final : public Layer {
public:
    // Throws ConfigError naming the option that is out of range.
    explicit Conv2d(const Conv2dOptions& options);

    const Conv2dOptions& options() const { return options_; }

    std::string_view kind() const override { return "Conv2d"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<Conv2d>(options_)); }
    Shape output_shape(const Shape& input) const override;
    MemoryEstimate memory_estimate(const Shape& input) const override;
    double forward_flops(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;

    std::vector<Parameter*> parameters() override;
    // weight from options.init with fan_in = in/groups*kh*kw, fan_out = out/groups*kh*kw and
    // key rng_key(seed, "weight"); bias zero.
    void initialize(std::uint64_t seed) override;
    // "1->32, 3x3, stride 1, pad 1" (groups, no bias and a non-default init when set).
    std::string options_text() const override;

protected:
    void on_bind(Device& device, const Shape& input, Layout layout) override;

private:
    Conv2dKernel& kernel(Device& device, const Shape& input, Layout layout);

    Conv2dOptions options_;
    Parameter weight_;
    Parameter bias_;
    KernelCache<Conv2dKernel> kernels_;
};

}  // namespace tandem

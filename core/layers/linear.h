// Linear: y = x W^T + b, x of shape N x in_features (flatten images first), y N x out_features.
//
// Parameters: "weight" out x in (decayed) and "bias" out (not decayed; absent without bias).
// Backward needs only its input, which the caller passes back, so forward keeps nothing.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/kernel_cache.h"
#include "layers/layer.h"

namespace tandem {

struct LinearOptions {
    std::int64_t in_features = 0, out_features = 0;
    bool bias = true;
    std::string init = "kaiming";  // see layers/init.h
};

class Linear final : public Layer {
public:
    // Throws ConfigError naming the option that is out of range.
    explicit Linear(const LinearOptions& options);

    const LinearOptions& options() const { return options_; }

    std::string_view kind() const override { return "Linear"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<Linear>(options_)); }
    Shape output_shape(const Shape& input) const override;
    MemoryEstimate memory_estimate(const Shape& input) const override;
    double forward_flops(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;

    std::vector<Parameter*> parameters() override;
    // weight from options.init (fan_in = in, fan_out = out, key rng_key(seed, "weight")),
    // bias zero.
    void initialize(std::uint64_t seed) override;
    // "3136->256" (no bias and a non-default init when set).
    std::string options_text() const override;

protected:
    void on_bind(Device& device, const Shape& input, Layout layout) override;

private:
    LinearKernel& kernel(Device& device, std::int64_t batch);

    LinearOptions options_;
    Parameter weight_;
    Parameter bias_;
    KernelCache<LinearKernel> kernels_;
};

}  // namespace tandem

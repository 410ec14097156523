#include "layers/dropout.h"

#include <cstdio>

#include "base/rng.h"

namespace tandem {

Dropout::Dropout(float p) : p_(p) {
    // Written as a positive test so that NaN is refused too.
    TANDEM_CHECK_AS(ConfigError, p >= 0.f && p < 1.f) << "Dropout: p must be in [0, 1), got " << p;
}

DropoutKernel& Dropout::kernel(Device& device, const Shape& shape) {
    return kernels_.get(device, DropoutConfig{shape.numel()}, kernel_impl());
}

void Dropout::on_bind(Device& device, const Shape& input, Layout layout) {
    (void)layout;  // the kernel reads the layout from its tensors
    if (p_ > 0.f) kernel(device, input);
}

MemoryEstimate Dropout::memory_estimate(const Shape& input) const {
    MemoryEstimate e;
    e.output_bytes = static_cast<std::size_t>(input.numel()) * sizeof(float);
    if (p_ > 0.f) e.saved_bytes = static_cast<std::size_t>(input.numel());  // the u8 mask
    return e;
}

Tensor Dropout::forward(const Tensor& x, Pass& pass) {
    if (pass.mode == Mode::eval || p_ == 0.f) return x;
    const std::uint64_t key = rng_key(pass.rng_key, name());
    Tensor mask = Tensor::empty(x.shape(), pass.device, DType::u8, x.layout());
    Tensor y = Tensor::empty(x.shape(), pass.device, DType::f32, x.layout());
    const std::uint64_t first = static_cast<std::uint64_t>(pass.first_sample) *
                                static_cast<std::uint64_t>(x.numel() / x.shape()[0]);
    kernel(pass.device, x.shape()).forward(x, p_, key, first, mask, y);
    pass.saved.put(this, {mask});
    return y;
}

Tensor Dropout::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    if (pass.mode == Mode::eval || p_ == 0.f) return dy;
    const Tensor& mask = pass.saved.get(this)[0];
    TANDEM_CHECK_AS(ShapeError, dy.shape() == x.shape() && dy.layout() == mask.layout())
        << label() << ": gradient " << dy.description() << " does not match the input "
        << x.description();
    Tensor dx = Tensor::empty(x.shape(), pass.device, DType::f32, x.layout());
    kernel(pass.device, x.shape()).backward(dy, mask, p_, dx);
    return dx;
}

std::string Dropout::options_text() const {
    char text[32];
    std::snprintf(text, sizeof text, "p = %g", static_cast<double>(p_));
    return text;
}

}  // namespace tandem

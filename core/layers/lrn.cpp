#include "layers/lrn.h"

#include <sstream>

namespace tandem {

LRN::LRN(const LrnOptions& options) : options_(options) {
    TANDEM_CHECK_AS(ConfigError, options.size > 0 && options.size % 2 == 1)
        << "LRN: size must be a positive odd number, got " << options.size;
    TANDEM_CHECK_AS(ConfigError, options.alpha >= 0 && options.beta >= 0)
        << "LRN: alpha and beta must not be negative, got alpha " << options.alpha << ", beta "
        << options.beta;
    TANDEM_CHECK_AS(ConfigError, options.k > 0) << "LRN: k must be positive, got " << options.k;
}

Shape LRN::output_shape(const Shape& input) const {
    TANDEM_CHECK_AS(ShapeError, input.rank() == 4 && input.numel() > 0)
        << label() << ": expected a non-empty N x C x H x W input, got " << input.to_string();
    return input;
}

MemoryEstimate LRN::memory_estimate(const Shape& input) const {
    MemoryEstimate e = Layer::memory_estimate(input);
    // oneDNN's workspace holds at most one float per element (the scale it divides by).
    e.saved_bytes = e.output_bytes;
    return e;
}

std::string LRN::options_text() const {
    std::ostringstream out;
    out << "size " << options_.size << ", alpha " << options_.alpha << ", beta " << options_.beta
        << ", k " << options_.k;
    return out.str();
}

LrnKernel& LRN::kernel(Device& device, const Shape& s, Layout layout) {
    const auto& o = options_;
    return kernels_.get(device,
                        LrnConfig{s[0], s[1], s[2], s[3], o.size, o.alpha, o.beta, o.k, layout},
                        kernel_impl());
}

void LRN::on_bind(Device& device, const Shape& input, Layout layout) {
    kernel(device, input, layout);
}

Tensor LRN::forward(const Tensor& x, Pass& pass) {
    const Shape s = output_shape(x.shape());
    LrnKernel& k = kernel(pass.device, s, x.layout());
    Tensor y = Tensor::empty(s, pass.device, DType::f32, x.layout());
    Tensor workspace;
    const bool training = pass.mode == Mode::train;
    if (training && k.workspace_bytes() > 0)
        workspace = Tensor::empty({std::int64_t(k.workspace_bytes())}, pass.device, DType::u8);
    k.forward(x, y, workspace);
    if (training) pass.saved.put(this, {workspace});
    return y;
}

Tensor LRN::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    const Shape s = output_shape(x.shape());
    TANDEM_CHECK_AS(ShapeError, dy.shape() == s)
        << label() << ": gradient " << dy.shape().to_string() << " does not match input "
        << s.to_string();
    LrnKernel& k = kernel(pass.device, s, x.layout());
    Tensor workspace;
    if (pass.mode == Mode::train) {
        workspace = pass.saved.get(this)[0];
    } else if (k.workspace_bytes() > 0) {
        // Evaluation kept nothing: recompute the workspace with a training forward.
        workspace = Tensor::empty({std::int64_t(k.workspace_bytes())}, pass.device, DType::u8);
        Tensor y = Tensor::empty(s, pass.device, DType::f32, x.layout());
        k.forward(x, y, workspace);
    }
    Tensor dx = Tensor::empty(s, pass.device, DType::f32, x.layout());
    k.backward(x, dy.to_layout(x.layout()), workspace, dx);
    return dx;
}

}  // namespace tandem

#include "layers/pool2d.h"

#include <sstream>

namespace tandem {

Pool2d::Pool2d(std::string_view kind, PoolKind pool, const Pool2dOptions& options, bool global)
    : pool_(pool), options_(options), global_(global) {
    if (global) return;
    const auto& o = options;
    TANDEM_CHECK_AS(ConfigError, o.kernel_h > 0 && o.kernel_w > 0)
        << kind << ": kernel must be positive, got " << o.kernel_h << "x" << o.kernel_w;
    TANDEM_CHECK_AS(ConfigError, o.stride_h >= 0 && o.stride_w >= 0)
        << kind << ": stride must not be negative, got " << o.stride_h << "x" << o.stride_w;
    TANDEM_CHECK_AS(ConfigError, o.pad_h >= 0 && o.pad_w >= 0)
        << kind << ": padding must not be negative, got " << o.pad_h << "x" << o.pad_w;
    TANDEM_CHECK_AS(ConfigError, 2 * o.pad_h <= o.kernel_h && 2 * o.pad_w <= o.kernel_w)
        << kind << ": padding " << o.pad_h << "x" << o.pad_w << " must be at most half the kernel "
        << o.kernel_h << "x" << o.kernel_w;
    if (options_.stride_h == 0) options_.stride_h = options_.kernel_h;
    if (options_.stride_w == 0) options_.stride_w = options_.kernel_w;
}

Pool2dConfig Pool2d::config(const Shape& s, Layout layout) const {
    Pool2dOptions o = options_;
    if (global_) o = Pool2dOptions{s[2], s[3], s[2], s[3], 0, 0, false, true};
    return Pool2dConfig{
        pool_,      s[0],       s[1],    s[2],    s[3],        o.kernel_h,          o.kernel_w,
        o.stride_h, o.stride_w, o.pad_h, o.pad_w, o.ceil_mode, o.count_include_pad, layout};
}

Shape Pool2d::output_shape(const Shape& input) const {
    TANDEM_CHECK_AS(ShapeError, input.rank() == 4 && input.numel() > 0)
        << label() << ": expected a non-empty N x C x H x W input, got " << input.to_string();
    const Pool2dConfig c = config(input, Layout::contiguous);
    TANDEM_CHECK_AS(ShapeError, c.h + 2 * c.pad_h >= c.kernel_h && c.w + 2 * c.pad_w >= c.kernel_w)
        << label() << ": input " << input.to_string() << " (padding " << c.pad_h << "x" << c.pad_w
        << ") is smaller than the kernel " << c.kernel_h << "x" << c.kernel_w;
    return Shape{input[0], input[1], c.out_h(), c.out_w()};
}

MemoryEstimate Pool2d::memory_estimate(const Shape& input) const {
    MemoryEstimate e = Layer::memory_estimate(input);
    // An upper bound: the reference kernel's int32 argmax per output (oneDNN's may be u8).
    if (pool_ == PoolKind::max) e.saved_bytes = e.output_bytes;
    return e;
}

std::string Pool2d::options_text() const {
    if (global_) return {};
    const auto& o = options_;
    std::ostringstream out;
    auto pair = [&](std::int64_t a, std::int64_t b) {
        out << a;
        if (a != b) out << "x" << b;
    };
    out << o.kernel_h << "x" << o.kernel_w << ", stride ";
    pair(o.stride_h, o.stride_w);
    if (o.pad_h != 0 || o.pad_w != 0) {
        out << ", pad ";
        pair(o.pad_h, o.pad_w);
    }
    if (o.ceil_mode) out << ", ceil";
    if (pool_ == PoolKind::average && !o.count_include_pad) out << ", exclude pad";
    return out.str();
}

Pool2dKernel& Pool2d::kernel(Device& device, const Shape& input, Layout layout) {
    return kernels_.get(device, config(input, layout), kernel_impl());
}

void Pool2d::on_bind(Device& device, const Shape& input, Layout layout) {
    kernel(device, input, layout);
}

Tensor Pool2d::forward(const Tensor& x, Pass& pass) {
    const Shape out = output_shape(x.shape());
    Pool2dKernel& k = kernel(pass.device, x.shape(), x.layout());
    Tensor y = Tensor::empty(out, pass.device, DType::f32, x.layout());
    Tensor workspace;
    const bool training = pass.mode == Mode::train;
    if (training && k.workspace_bytes() > 0)
        workspace = Tensor::empty({std::int64_t(k.workspace_bytes())}, pass.device, DType::u8);
    k.forward(x, y, workspace);
    if (training) pass.saved.put(this, {workspace});
    return y;
}

Tensor Pool2d::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    const Shape out = output_shape(x.shape());
    TANDEM_CHECK_AS(ShapeError, dy.shape() == out)
        << label() << ": gradient " << dy.shape().to_string() << " does not match output "
        << out.to_string() << " of input " << x.shape().to_string();
    Pool2dKernel& k = kernel(pass.device, x.shape(), x.layout());
    Tensor workspace;
    if (pass.mode == Mode::train) {
        workspace = pass.saved.get(this)[0];
    } else if (k.workspace_bytes() > 0) {
        // Evaluation kept nothing: find the argmax again with a training forward.
        workspace = Tensor::empty({std::int64_t(k.workspace_bytes())}, pass.device, DType::u8);
        Tensor y = Tensor::empty(out, pass.device, DType::f32, x.layout());
        k.forward(x, y, workspace);
    }
    Tensor dx = Tensor::empty(x.shape(), pass.device, DType::f32, x.layout());
    k.backward(dy.to_layout(x.layout()), workspace, dx);
    return dx;
}

}  // namespace tandem

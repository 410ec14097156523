#include "layers/conv2d.h"

#include "base/format.h"
#include "base/rng.h"
#include "layers/init.h"

namespace tandem {
namespace {

void check_option(bool ok, const char* name, std::int64_t value, const char* rule) {
    TANDEM_CHECK_AS(ConfigError, ok)
        << "Conv2d: option " << name << " must be " << rule << ", got " << value;
}

std::string pair_text(std::int64_t a, std::int64_t b) {
    return a == b ? std::to_string(a) : std::to_string(a) + "x" + std::to_string(b);
}

}  // namespace

Conv2d::Conv2d(const Conv2dOptions& o) : options_(o) {
    check_option(o.in_channels > 0, "in_channels", o.in_channels, "positive");
    check_option(o.out_channels > 0, "out_channels", o.out_channels, "positive");
    check_option(o.kernel_h > 0, "kernel_h", o.kernel_h, "positive");
    check_option(o.kernel_w > 0, "kernel_w", o.kernel_w, "positive");
    check_option(o.stride_h > 0, "stride_h", o.stride_h, "positive");
    check_option(o.stride_w > 0, "stride_w", o.stride_w, "positive");
    check_option(o.pad_h >= 0, "pad_h", o.pad_h, "non-negative");
    check_option(o.pad_w >= 0, "pad_w", o.pad_w, "non-negative");
    check_option(o.groups > 0, "groups", o.groups, "positive");
    TANDEM_CHECK_AS(ConfigError, o.in_channels % o.groups == 0 && o.out_channels % o.groups == 0)
        << "Conv2d: option groups (" << o.groups << ") must divide in_channels (" << o.in_channels
        << ") and out_channels (" << o.out_channels << ")";
    TANDEM_CHECK_AS(ConfigError, is_init_scheme(o.init))
        << "Conv2d: unknown option init '" << o.init << "' (known: " << join(init_schemes(), ", ")
        << ")";
    weight_ = make_parameter(
        "weight", {o.out_channels, o.in_channels / o.groups, o.kernel_h, o.kernel_w}, true);
    if (o.bias) bias_ = make_parameter("bias", {o.out_channels}, false);
    initialize(0);
}

std::vector<Parameter*> Conv2d::parameters() {
    if (options_.bias) return {&weight_, &bias_};
    return {&weight_};
}

void Conv2d::initialize(std::uint64_t seed) {
    const auto& o = options_;
    const std::int64_t window = o.kernel_h * o.kernel_w;
    init_tensor(weight_.value, o.init, o.in_channels / o.groups * window,
                o.out_channels / o.groups * window, rng_key(seed, "weight"));
    if (o.bias) bias_.value.fill(0.f);
}

Shape Conv2d::output_shape(const Shape& input) const {
    const auto& o = options_;
    const std::string who = "Conv2d '" + name() + "': ";
    TANDEM_CHECK_AS(ShapeError, input.rank() == 4)
        << who << "input must be N x C x H x W, got " << input.to_string() << " (rank "
        << input.rank() << ")";
    TANDEM_CHECK_AS(ShapeError, input[1] == o.in_channels)
        << who << "input has " << input[1] << " channels, weight expects " << o.in_channels
        << " (input " << input.to_string() << ", weight " << weight_.value.shape().to_string()
        << ")";
    const std::int64_t oh = (input[2] + 2 * o.pad_h - o.kernel_h) / o.stride_h + 1;
    const std::int64_t ow = (input[3] + 2 * o.pad_w - o.kernel_w) / o.stride_w + 1;
    // Division truncates toward zero, so a window larger than the padded input would give 1.
    TANDEM_CHECK_AS(ShapeError, input[2] + 2 * o.pad_h >= o.kernel_h &&
                                    input[3] + 2 * o.pad_w >= o.kernel_w && oh >= 1 && ow >= 1)
        << who << "input " << input.to_string() << " padded by " << pair_text(o.pad_h, o.pad_w)
        << " is smaller than the " << o.kernel_h << "x" << o.kernel_w << " kernel (weight "
        << weight_.value.shape().to_string() << ")";
    return Shape{input[0], o.out_channels, oh, ow};
}

double Conv2d::forward_flops(const Shape& input) const {
    // Two flops per multiply-add: each output element sums (in / groups) * kh * kw products.
    const Shape out = output_shape(input);
    const auto& o = options_;
    return 2.0 * static_cast<double>(out.numel()) *
           static_cast<double>(o.in_channels / o.groups * o.kernel_h * o.kernel_w);
}

MemoryEstimate Conv2d::memory_estimate(const Shape& input) const {
    MemoryEstimate e;
    e.parameter_bytes = weight_.value.nbytes() + (options_.bias ? bias_.value.nbytes() : 0);
    e.output_bytes = static_cast<std::size_t>(output_shape(input).numel()) * sizeof(float);
    return e;
}

std::string Conv2d::options_text() const {
    const auto& o = options_;
    std::string text = std::to_string(o.in_channels) + "->" + std::to_string(o.out_channels) +
                       ", " + std::to_string(o.kernel_h) + "x" + std::to_string(o.kernel_w) +
                       ", stride " + pair_text(o.stride_h, o.stride_w) + ", pad " +
                       pair_text(o.pad_h, o.pad_w);
    if (o.groups != 1) text += ", groups " + std::to_string(o.groups);
    if (!o.bias) text += ", no bias";
    if (o.init != "kaiming") text += ", init " + o.init;
    return text;
}

Conv2dKernel& Conv2d::kernel(Device& device, const Shape& input, Layout layout) {
    const auto& o = options_;
    const Conv2dConfig config{.n = input[0],
                              .c = input[1],
                              .h = input[2],
                              .w = input[3],
                              .out_channels = o.out_channels,
                              .kernel_h = o.kernel_h,
                              .kernel_w = o.kernel_w,
                              .stride_h = o.stride_h,
                              .stride_w = o.stride_w,
                              .pad_h = o.pad_h,
                              .pad_w = o.pad_w,
                              .groups = o.groups,
                              .bias = o.bias,
                              .layout = layout,
                              .precision = precision()};
    return kernels_.get(device, config, kernel_impl());
}

void Conv2d::on_bind(Device& device, const Shape& input, Layout layout) {
    kernel(device, input, layout);
}

Tensor Conv2d::forward(const Tensor& x, Pass& pass) {
    const Shape out = output_shape(x.shape());
    Tensor y = Tensor::empty(out, pass.device, DType::f32, x.layout());
    kernel(pass.device, x.shape(), x.layout()).forward(x, weight_.value, bias_.value, y);
    return y;
}

Tensor Conv2d::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    const Shape out = output_shape(x.shape());
    TANDEM_CHECK_AS(ShapeError, dy.shape() == out)
        << "Conv2d '" << name() << "': gradient " << dy.shape().to_string()
        << " does not match the output " << out.to_string() << " (input " << x.shape().to_string()
        << ")";
    // Kernels read dy in x's layout; a gradient arriving in the other one is converted once.
    const Tensor dy_in_layout = dy.layout() == x.layout() ? dy : dy.to_layout(x.layout());
    auto& k = kernel(pass.device, x.shape(), x.layout());
    if (!pass.need_dx) {
        k.backward_weights(x, dy_in_layout, weight_.grad, bias_.grad);
        return Tensor();
    }
    Tensor dx = Tensor::empty(x.shape(), pass.device, DType::f32, x.layout());
    k.backward(x, dy_in_layout, weight_.value, dx, weight_.grad, bias_.grad);
    return dx;
}

}  // namespace tandem

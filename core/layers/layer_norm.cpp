#include "layers/layer_norm.h"

namespace tandem {

LayerNorm::LayerNorm(std::vector<std::int64_t> normalized_shape, float eps, bool affine)
    : shape_(std::move(normalized_shape)), eps_(eps), affine_(affine) {
    TANDEM_CHECK_AS(ConfigError, !shape_.empty()) << "LayerNorm: normalized_shape is empty";
    for (auto d : shape_)
        TANDEM_CHECK_AS(ConfigError, d >= 1) << "LayerNorm: size " << d << " in normalized_shape";
    TANDEM_CHECK_AS(ConfigError, eps > 0) << "LayerNorm: eps must be positive, got " << eps;
    if (affine_) {
        weight_ = make_parameter("weight", Shape(shape_), false);
        bias_ = make_parameter("bias", Shape(shape_), false);
    }
    initialize(0);
}

LayerPtr LayerNorm::clone() const {
    return finish_clone(std::make_shared<LayerNorm>(shape_, eps_, affine_));
}

std::string LayerNorm::options_text() const {
    std::string text = Shape(shape_).to_string() + ", eps " + std::to_string(eps_).substr(0, 7);
    if (!affine_) text += ", no affine";
    return text;
}

std::vector<Parameter*> LayerNorm::parameters() {
    if (!affine_) return {};
    return {&weight_, &bias_};
}

void LayerNorm::initialize(std::uint64_t) {
    if (!affine_) return;
    weight_.value.fill(1);
    bias_.value.fill(0);
}

Shape LayerNorm::output_shape(const Shape& input) const {
    const int k = static_cast<int>(shape_.size());
    bool fits = input.rank() > k;
    for (int i = 0; fits && i < k; ++i)
        fits = input[input.rank() - k + i] == shape_[static_cast<std::size_t>(i)];
    TANDEM_CHECK_AS(ShapeError, fits)
        << label() << ": the input " << input.to_string() << " does not end in "
        << Shape(shape_).to_string() << " (after a batch dimension)";
    return input;
}

LayerNormKernel& LayerNorm::kernel(Device& device, const Shape& input) {
    const std::int64_t cols = Shape(shape_).numel();
    return kernels_.get(device, LayerNormConfig{input.numel() / cols, cols, eps_, affine_},
                        kernel_impl());
}

Tensor LayerNorm::forward(const Tensor& x, Pass& pass) {
    output_shape(x.shape());
    const Tensor plain = in_layout(x, Layout::contiguous, pass.device);
    LayerNormKernel& k = kernel(pass.device, x.shape());
    const std::int64_t rows = x.numel() / Shape(shape_).numel();
    Tensor y = Tensor::empty(x.shape(), pass.device);
    Tensor mean = Tensor::empty({rows}, pass.device), rstd = Tensor::empty({rows}, pass.device);
    k.forward(plain, weight_.value, bias_.value, y, mean, rstd);
    if (pass.mode == Mode::train) pass.saved.put(this, {plain, mean, rstd});
    return in_layout(y, x.layout(), pass.device);
}

Tensor LayerNorm::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    TANDEM_CHECK_AS(ShapeError, dy.shape() == x.shape())
        << label() << ": gradient " << dy.shape().to_string() << " does not match the output "
        << x.shape().to_string();
    const std::vector<Tensor> saved = pass.saved.get(this);
    pass.saved.erase(this);
    Tensor dx = Tensor::empty(x.shape(), pass.device);
    kernel(pass.device, x.shape())
        .backward(saved[0], in_layout(dy, Layout::contiguous, pass.device), weight_.value, saved[1],
                  saved[2], dx, weight_.grad, bias_.grad);
    return in_layout(dx, x.layout(), pass.device);
}

}  // namespace tandem

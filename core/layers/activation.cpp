#include "layers/activation.h"

#include <cmath>
#include <sstream>

namespace tandem {

Activation::Activation(ActivationAlgorithm algorithm, float alpha)
    : algorithm_(algorithm), alpha_(alpha) {
    TANDEM_CHECK_AS(ConfigError, std::isfinite(alpha))
        << activation_name(algorithm) << ": negative_slope must be a finite number, got " << alpha;
    TANDEM_CHECK_AS(ConfigError, algorithm == ActivationAlgorithm::leaky_relu || alpha == 0.f)
        << activation_name(algorithm) << " takes no slope (got " << alpha << ")";
}

LayerPtr Activation::clone() const {
    return finish_clone(std::make_shared<Activation>(algorithm_, alpha_));
}

std::string Activation::options_text() const {
    std::ostringstream out;
    switch (algorithm_) {
        case ActivationAlgorithm::leaky_relu: out << "negative_slope = " << alpha_; break;
        case ActivationAlgorithm::gelu_erf: out << "approximate = 'none'"; break;
        case ActivationAlgorithm::gelu_tanh: out << "approximate = 'tanh'"; break;
        case ActivationAlgorithm::relu:
        case ActivationAlgorithm::sigmoid:
        case ActivationAlgorithm::tanh: break;
    }
    return out.str();
}

ActivationKernel& Activation::kernel(Device& device, const Shape& shape, Layout layout) {
    return kernels_.get(device, ActivationConfig{shape, layout, algorithm_, alpha_}, kernel_impl());
}

void Activation::on_bind(Device& device, const Shape& input, Layout layout) {
    kernel(device, input, layout);
}

Tensor Activation::forward(const Tensor& x, Pass& pass) {
    Tensor y = Tensor::empty(x.shape(), pass.device, DType::f32, x.layout());
    kernel(pass.device, x.shape(), x.layout()).forward(x, y);
    if (pass.mode == Mode::train && activation_backward_uses_dst(algorithm_))
        pass.saved.put(this, {y});
    return y;
}

Tensor Activation::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    const Tensor& saved = activation_backward_uses_dst(algorithm_) ? pass.saved.get(this)[0] : x;
    Tensor dx = Tensor::empty(x.shape(), pass.device, DType::f32, x.layout());
    kernel(pass.device, x.shape(), x.layout()).backward(saved, dy, dx);
    return dx;
}

bool is_relu(const Layer& layer) {
    const auto* activation = dynamic_cast<const Activation*>(&layer);
    return activation != nullptr && activation->algorithm() == ActivationAlgorithm::relu;
}

}  // namespace tandem

#include "layers/linear.h"

#include "base/format.h"
#include "base/rng.h"
#include "layers/init.h"

namespace tandem {

Linear::Linear(const LinearOptions& o) : options_(o) {
    TANDEM_CHECK_AS(ConfigError, o.in_features > 0)
        << "Linear: option in_features must be positive, got " << o.in_features;
    TANDEM_CHECK_AS(ConfigError, o.out_features > 0)
        << "Linear: option out_features must be positive, got " << o.out_features;
    TANDEM_CHECK_AS(ConfigError, is_init_scheme(o.init))
        << "Linear: unknown option init '" << o.init << "' (known: " << join(init_schemes(), ", ")
        << ")";
    weight_ = make_parameter("weight", {o.out_features, o.in_features}, true);
    if (o.bias) bias_ = make_parameter("bias", {o.out_features}, false);
    initialize(0);
}

std::vector<Parameter*> Linear::parameters() {
    if (options_.bias) return {&weight_, &bias_};
    return {&weight_};
}

void Linear::initialize(std::uint64_t seed) {
    init_tensor(weight_.value, options_.init, options_.in_features, options_.out_features,
                rng_key(seed, "weight"));
    if (options_.bias) bias_.value.fill(0.f);
}

Shape Linear::output_shape(const Shape& input) const {
    const std::string who = "Linear '" + name() + "': ";
    const std::string weight = weight_.value.shape().to_string();
    TANDEM_CHECK_AS(ShapeError, input.rank() != 4)
        << who << "input " << input.to_string() << " is an image batch; Linear takes N x "
        << options_.in_features << " (weight " << weight << "): add a Flatten before it";
    TANDEM_CHECK_AS(ShapeError, input.rank() == 2)
        << who << "input must be N x " << options_.in_features << ", got " << input.to_string()
        << " (weight " << weight << ")";
    TANDEM_CHECK_AS(ShapeError, input[1] == options_.in_features)
        << who << "input has " << input[1] << " features, weight expects " << options_.in_features
        << " (input " << input.to_string() << ", weight " << weight << ")";
    return Shape{input[0], options_.out_features};
}

double Linear::forward_flops(const Shape& input) const {
    const Shape out = output_shape(input);
    return 2.0 * static_cast<double>(out.numel()) * static_cast<double>(options_.in_features);
}

MemoryEstimate Linear::memory_estimate(const Shape& input) const {
    MemoryEstimate e;
    e.parameter_bytes = weight_.value.nbytes() + (options_.bias ? bias_.value.nbytes() : 0);
    e.output_bytes = static_cast<std::size_t>(output_shape(input).numel()) * sizeof(float);
    return e;
}

std::string Linear::options_text() const {
    std::string text =
        std::to_string(options_.in_features) + "->" + std::to_string(options_.out_features);
    if (!options_.bias) text += ", no bias";
    if (options_.init != "kaiming") text += ", init " + options_.init;
    return text;
}

LinearKernel& Linear::kernel(Device& device, std::int64_t batch) {
    return kernels_.get(device,
                        LinearConfig{batch, options_.in_features, options_.out_features,
                                     options_.bias, precision()},
                        kernel_impl());
}

void Linear::on_bind(Device& device, const Shape& input, Layout) {
    kernel(device, input[0]);
}

Tensor Linear::forward(const Tensor& x, Pass& pass) {
    const Shape out = output_shape(x.shape());
    Tensor y = Tensor::empty(out, pass.device);
    kernel(pass.device, out[0]).forward(x, weight_.value, bias_.value, y);
    return y;
}

Tensor Linear::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    const Shape out = output_shape(x.shape());
    TANDEM_CHECK_AS(ShapeError, dy.shape() == out)
        << "Linear '" << name() << "': gradient " << dy.shape().to_string()
        << " does not match the output " << out.to_string() << " (input " << x.shape().to_string()
        << ")";
    auto& k = kernel(pass.device, out[0]);
    if (!pass.need_dx) {
        k.backward_weights(x, dy, weight_.grad, bias_.grad);
        return Tensor();
    }
    Tensor dx = Tensor::empty(x.shape(), pass.device);
    k.backward(x, dy, weight_.value, dx, weight_.grad, bias_.grad);
    return dx;
}

}  // namespace tandem

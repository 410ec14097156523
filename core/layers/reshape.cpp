#include "layers/reshape.h"

#include "kernels/kernel_cache.h"

namespace tandem {

Reshape::Reshape(std::vector<std::int64_t> sample_shape) : sample_shape_(std::move(sample_shape)) {
    TANDEM_CHECK_AS(ConfigError, !sample_shape_.empty())
        << "Reshape: the shape of a sample is empty";
    int unknown = 0;
    for (auto d : sample_shape_) {
        TANDEM_CHECK_AS(ConfigError, d >= 1 || d == -1)
            << "Reshape: size " << d << " in " << options_text()
            << " (sizes are 1 or more, or one -1)";
        unknown += d == -1;
    }
    TANDEM_CHECK_AS(ConfigError, unknown <= 1)
        << "Reshape: " << options_text() << " has more than one -1";
}

std::string Reshape::options_text() const {
    std::string text = "to N";
    for (auto d : sample_shape_) {
        text += 'x';
        text += d == -1 ? std::string("?") : std::to_string(d);
    }
    return text;
}

Shape Reshape::output_shape(const Shape& input) const {
    TANDEM_CHECK_AS(ShapeError, input.rank() >= 1)
        << label() << ": the input has no batch dimension";
    std::int64_t per_sample = 1, known = 1;
    for (int i = 1; i < input.rank(); ++i) per_sample *= input[i];
    for (auto d : sample_shape_)
        if (d != -1) known *= d;
    std::vector<std::int64_t> dims{input[0]};
    std::int64_t out_per_sample = 1;
    for (auto d : sample_shape_) {
        dims.push_back(d == -1 ? per_sample / known : d);
        out_per_sample *= dims.back();
    }
    TANDEM_CHECK_AS(ShapeError, out_per_sample == per_sample)
        << label() << ": a sample of the input " << input.to_string() << " has " << per_sample
        << " elements, which cannot be shaped " << options_text();
    return Shape(dims);
}

Tensor Reshape::forward(const Tensor& x, Pass& pass) {
    const Shape y_shape = output_shape(x.shape());
    return in_layout(x, Layout::contiguous, pass.device).reshape(y_shape);
}

Tensor Reshape::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    const Shape y_shape = output_shape(x.shape());
    TANDEM_CHECK_AS(ShapeError, dy.shape() == y_shape)
        << label() << ": gradient " << dy.shape().to_string() << " does not match the output "
        << y_shape.to_string();
    const Tensor plain = in_layout(dy, Layout::contiguous, pass.device).reshape(x.shape());
    return in_layout(plain, x.layout(), pass.device);
}

}  // namespace tandem

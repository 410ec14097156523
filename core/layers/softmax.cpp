#include "layers/softmax.h"

#include "layers/slice.h"

namespace tandem {

Softmax::Softmax(int dim, bool log) : dim_(dim), log_(log) {
    TANDEM_CHECK_AS(ConfigError, dim != 0) << kind()
                                           << ": dimension 1 is the batch (a softmax over it would "
                                              "mix samples); 2 is channels or features";
}

std::string Softmax::options_text() const {
    return dim_ < 0 ? "dimension " + std::to_string(dim_) : "dimension " + std::to_string(dim_ + 1);
}

int Softmax::resolved(int rank) const {
    return dim_ < 0 ? rank + dim_ : dim_;
}

Shape Softmax::output_shape(const Shape& input) const {
    const int d = resolved(input.rank());
    TANDEM_CHECK_AS(ShapeError, d >= 1 && d < input.rank())
        << label() << ": the input " << input.to_string() << " has no " << options_text()
        << (d == 0 ? " other than the batch" : "");
    return input;
}

SoftmaxKernel& Softmax::kernel(Device& device, const Tensor& x) {
    const DimensionSpan s = dimension_span(x.shape(), x.layout(), resolved(x.shape().rank()));
    return kernels_.get(device, SoftmaxConfig{s.outer, s.size, s.inner, log_}, kernel_impl());
}

Tensor Softmax::forward(const Tensor& x, Pass& pass) {
    output_shape(x.shape());
    Tensor y = Tensor::empty(x.shape(), pass.device, DType::f32, x.layout());
    kernel(pass.device, x).forward(x, y);
    if (pass.mode == Mode::train) pass.saved.put(this, {y});
    return y;
}

Tensor Softmax::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    TANDEM_CHECK_AS(ShapeError, dy.shape() == x.shape())
        << label() << ": gradient " << dy.shape().to_string() << " does not match the output "
        << x.shape().to_string();
    const Tensor y = pass.saved.get(this).at(0);
    pass.saved.erase(this);
    Tensor dx = Tensor::empty(x.shape(), pass.device, DType::f32, x.layout());
    kernel(pass.device, x).backward(y, in_layout(dy, x.layout(), pass.device), dx);
    return dx;
}

}  // namespace tandem

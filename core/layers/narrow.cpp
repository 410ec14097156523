#include "layers/narrow.h"

#include "kernels/kernel_cache.h"
#include "layers/slice.h"

namespace tandem {

Narrow::Narrow(int dim, std::int64_t start, std::int64_t length)
    : dim_(dim), start_(start), length_(length) {
    TANDEM_CHECK_AS(ConfigError, dim >= 1)
        << "Narrow: dimension " << dim + 1 << " cannot be narrowed (dimension 1 is the batch)";
    TANDEM_CHECK_AS(ConfigError, start >= 0 && length >= 1)
        << "Narrow: start " << start + 1 << " and length " << length
        << " must be 1 or more (start counts from 1)";
}

std::string Narrow::options_text() const {
    return "dimension " + std::to_string(dim_ + 1) + ", " + std::to_string(start_ + 1) + ".." +
           std::to_string(start_ + length_);
}

Shape Narrow::output_shape(const Shape& input) const {
    TANDEM_CHECK_AS(ShapeError, dim_ < input.rank())
        << label() << ": the input " << input.to_string() << " has no dimension " << dim_ + 1;
    TANDEM_CHECK_AS(ShapeError, start_ + length_ <= input[dim_])
        << label() << ": indices " << start_ + 1 << ".." << start_ + length_ << " of dimension "
        << dim_ + 1 << " do not fit the input " << input.to_string() << " (size " << input[dim_]
        << " there)";
    Shape out = input;
    out[dim_] = length_;
    return out;
}

Tensor Narrow::forward(const Tensor& x, Pass& pass) {
    Tensor y = Tensor::empty(output_shape(x.shape()), pass.device, x.dtype(), x.layout());
    copy_slice_out(x, dim_, start_, y, pass.device);
    return y;
}

Tensor Narrow::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    const Shape y_shape = output_shape(x.shape());
    TANDEM_CHECK_AS(ShapeError, dy.shape() == y_shape)
        << label() << ": gradient " << dy.shape().to_string() << " does not match the output "
        << y_shape.to_string();
    Tensor dx = Tensor::empty(x.shape(), pass.device, DType::f32, x.layout());
    tensor_ops(pass.device).fill(dx, 0);
    copy_slice_in(in_layout(dy, x.layout(), pass.device), dx, dim_, start_, pass.device);
    return dx;
}

}  // namespace tandem

#include "layers/flatten.h"

#include "kernels/kernel_cache.h"

namespace tandem {

Shape Flatten::output_shape(const Shape& input) const {
    TANDEM_CHECK_AS(ShapeError, input.rank() >= 2)
        << label() << ": expected an input of rank 2 or more (N x ...), got " << input.to_string();
    // The product of the trailing dimensions, not numel / N, so an empty batch flattens too.
    std::int64_t features = 1;
    for (int i = 1; i < input.rank(); ++i) features *= input[i];
    return Shape{input[0], features};
}

Tensor Flatten::forward(const Tensor& x, Pass& pass) {
    const Shape y_shape = output_shape(x.shape());
    if (x.layout() == Layout::contiguous) return x.reshape(y_shape);
    Tensor plain = Tensor::empty(x.shape(), pass.device, x.dtype(), Layout::contiguous);
    tensor_ops(pass.device).copy(x, plain);
    return plain.reshape(y_shape);
}

Tensor Flatten::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    const Shape y_shape = output_shape(x.shape());
    TANDEM_CHECK_AS(ShapeError, dy.shape() == y_shape)
        << label() << ": gradient " << dy.shape().to_string() << " does not match the output "
        << y_shape.to_string() << " of input " << x.shape().to_string();
    const Tensor plain = dy.reshape(x.shape());
    if (x.layout() == Layout::contiguous) return plain;
    Tensor dx = Tensor::empty(x.shape(), pass.device, dy.dtype(), x.layout());
    tensor_ops(pass.device).copy(plain, dx);
    return dx;
}

}  // namespace tandem

#include "layers/relu.h"

namespace tandem {

ReluKernel& ReLU::kernel(Device& device, const Shape& shape, Layout layout) {
    return kernels_.get(device, ReluConfig{shape, layout}, kernel_impl());
}

void ReLU::on_bind(Device& device, const Shape& input, Layout layout) {
    kernel(device, input, layout);
}

Tensor ReLU::forward(const Tensor& x, Pass& pass) {
    Tensor y = Tensor::empty(x.shape(), pass.device, DType::f32, x.layout());
    kernel(pass.device, x.shape(), x.layout()).forward(x, y);
    if (pass.mode == Mode::train) pass.saved.put(this, {y});
    return y;
}

Tensor ReLU::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    const Tensor& y = pass.saved.get(this)[0];
    Tensor dx = Tensor::empty(x.shape(), pass.device, DType::f32, x.layout());
    kernel(pass.device, x.shape(), x.layout()).backward(y, dy, dx);
    return dx;
}

}  // namespace tandem

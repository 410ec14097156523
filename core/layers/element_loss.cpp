#include "layers/element_loss.h"

namespace tandem {

std::string_view ElementLoss::kind() const {
    return kind_ == ElementLossKind::mse ? "MSE" : "BCEWithLogits";
}

ElementLossKernel& ElementLoss::kernel(const Tensor& output, const Tensor& targets, Pass& pass,
                                       Tensor& placed) {
    TANDEM_CHECK_AS(ShapeError, targets.shape() == output.shape())
        << kind() << ": targets " << targets.shape().to_string() << " and the net's output "
        << output.shape().to_string() << " differ in shape";
    TANDEM_CHECK_AS(ShapeError, output.dtype() == DType::f32 && targets.dtype() == DType::f32)
        << kind() << ": the output and targets must be F32, got " << dtype_name(output.dtype())
        << " and " << dtype_name(targets.dtype());
    if (pass.saved.contains(this)) {
        placed = pass.saved.get(this)[0];
        pass.saved.erase(this);
    } else {
        placed = targets;
        if (&placed.device() != &pass.device) placed = placed.to(pass.device);
        if (placed.layout() != output.layout()) placed = placed.to_layout(output.layout());
    }
    const std::int64_t n = output.shape()[0];
    return kernels_.get(pass.device, ElementLossConfig{kind_, n, output.numel() / n});
}

LossSums ElementLoss::forward(const Tensor& output, const Tensor& targets, Pass& pass) {
    Tensor placed;
    const LossSums sums = kernel(output, targets, pass, placed).forward(output, placed);
    // Only when they were moved: otherwise backward takes the targets as given.
    if (pass.mode == Mode::train && placed.raw() != targets.raw()) pass.saved.put(this, {placed});
    return sums;
}

Tensor ElementLoss::backward(const Tensor& output, const Tensor& targets, float scale, Pass& pass) {
    Tensor placed;
    auto& k = kernel(output, targets, pass, placed);
    Tensor diff = Tensor::empty(output.shape(), pass.device, DType::f32, output.layout());
    k.backward(output, placed, scale, diff);
    return diff;
}

}  // namespace tandem

#include "device/cpu/reference/rounded_operands.h"

namespace tandem::cpu {

Tensor rounded_to(const Tensor& t, Precision precision) {
    // Element-wise, so the storage order (either layout) does not matter.
    Tensor out = Tensor::empty(t.shape(), t.device(), DType::f32, t.layout());
    const float* from = t.data<float>();
    float* to = out.data<float>();
    for (std::int64_t i = 0; i < t.numel(); ++i) to[i] = round_to(precision, from[i]);
    return out;
}

}  // namespace tandem::cpu

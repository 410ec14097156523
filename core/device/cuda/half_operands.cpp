#include "device/cuda/half_operands.h"

#include "device/cuda/check.h"

namespace tandem::cuda {
namespace {

std::optional<kernels::HalfFormat> half_format(Precision precision) {
    switch (precision) {
        case Precision::fp16: return kernels::HalfFormat::fp16;
        case Precision::bf16: return kernels::HalfFormat::bf16;
        case Precision::fp32:
        case Precision::tf32: break;
    }
    return std::nullopt;
}

}  // namespace

HalfOperands::HalfOperands(CudaDevice& device, Precision precision)
    : device_(device), format_(half_format(precision)) {}

cudnnDataType_t HalfOperands::cudnn_type() const {
    if (!format_) return CUDNN_DATA_FLOAT;
    return *format_ == kernels::HalfFormat::fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
}

cudaDataType_t HalfOperands::cublas_type() const {
    if (!format_) return CUDA_R_32F;
    return *format_ == kernels::HalfFormat::fp16 ? CUDA_R_16F : CUDA_R_16BF;
}

Tensor HalfOperands::scratch(std::int64_t count) const {
    const std::int64_t bytes = narrowed() ? 2 : 4;
    return Tensor::empty({count * bytes}, device_, DType::u8);
}

const void* HalfOperands::read(const void* src, std::int64_t count, Tensor& held) const {
    if (!format_) return src;
    held = scratch(count);
    kernels::narrow(*format_, static_cast<const float*>(src),
                    static_cast<std::uint16_t*>(held.raw()), count, device_.compute_stream());
    check_launch("narrow (mixed-precision operand)");
    return held.raw();
}

void* HalfOperands::result(void* dst, std::int64_t count, Tensor& held) const {
    if (!format_) return dst;
    held = scratch(count);
    return held.raw();
}

void HalfOperands::widen(const Tensor& held, void* dst, std::int64_t count) const {
    if (!format_) return;
    kernels::widen(*format_, static_cast<const std::uint16_t*>(held.raw()),
                   static_cast<float*>(dst), count, device_.compute_stream());
    check_launch("widen (mixed-precision result)");
}

void HalfOperands::add_widened(const Tensor& held, void* dst, std::int64_t count) const {
    if (!format_) return;
    kernels::add_widened(*format_, static_cast<const std::uint16_t*>(held.raw()),
                         static_cast<float*>(dst), count, device_.compute_stream());
    check_launch("add_widened (mixed-precision result)");
}

}  // namespace tandem::cuda

// The operands of a CUDA kernel computing in fp16 or bf16 (device/precision.h): the float32
// tensors a product reads are narrowed to 16-bit copies on the compute stream first, and what
// a library writes in 16 bits is widened back into the float32 results. In fp32 (and tf32,
// the device's option) every call here leaves the float32 tensors as they are, so a kernel
// has one path for all precisions.
//
// The copies live in tensors of the call's own (`held`): taken from the device's allocator,
// they count against its cap like any tensor, and the caching allocator makes taking them each
// call cheap. Dropping one when the call returns is safe with kernels still queued that read
// it: its block is used again only by work queued after them on the same compute stream
// (cuda_device.h). Kept between calls instead, they would hold an activation-sized copy per
// layer for the whole run.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <optional>

#include "device/cuda/cuda_device.h"
#include "device/cuda/kernels.cuh"
#include "tensor/tensor.h"

namespace tandem::cuda {

class HalfOperands {
public:
    HalfOperands(CudaDevice& device, Precision precision);

    // Whether products read 16-bit copies (fp16, bf16) rather than the float32 tensors.
    bool narrowed() const { return format_.has_value(); }
    // The operands' type as cuDNN's descriptors and cublasGemmEx name it.
    cudnnDataType_t cudnn_type() const;
    cudaDataType_t cublas_type() const;

    // Memory for `count` operands of the products' type (bytes, as a u8 tensor).
    Tensor scratch(std::int64_t count) const;
    // Where a product reads the `count` floats at `src`: `src`, or their narrowed copy in
    // `held`, made here (keep it until the product is queued).
    const void* read(const void* src, std::int64_t count, Tensor& held) const;
    // Where a product writes `count` results bound for the floats at `dst`: `dst`, or `held`,
    // made here, which widen or add_widened then turns into `dst`.
    void* result(void* dst, std::int64_t count, Tensor& held) const;
    // dst = what the product wrote into `held`; nothing to do when it wrote `dst` itself.
    void widen(const Tensor& held, void* dst, std::int64_t count) const;
    // dst += what the product wrote into `held`; nothing to do when it added into `dst` itself.
    void add_widened(const Tensor& held, void* dst, std::int64_t count) const;

private:
    CudaDevice& device_;
    std::optional<kernels::HalfFormat> format_;  // none: float32 operands
};

}  // namespace tandem::cuda

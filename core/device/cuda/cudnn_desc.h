// Shared pieces of the CUDA kernels: RAII cuDNN descriptors built from plan.h's dimensions,
// and checked access to a tensor's device pointer (a pointer into another device's memory
// would fault the GPU context for good, so every kernel argument is checked first).
#pragma once

#include <cudnn.h>

#include <string_view>

#include "device/cuda/cuda_device.h"
#include "device/cuda/plan.h"
#include "tensor/tensor.h"

namespace tandem::cuda {

// alpha/beta blend factors as cuDNN and cuBLAS take them for float data.
inline constexpr float kOne = 1.f;
inline constexpr float kZero = 0.f;

// Descriptors of float32 tensors unless given another type (half and bfloat16 for the
// operands of mixed precision: half_operands.h).
class TensorDesc {
public:
    explicit TensorDesc(const Dims4& d, cudnnDataType_t type = CUDNN_DATA_FLOAT);
    ~TensorDesc();
    TensorDesc(const TensorDesc&) = delete;
    TensorDesc& operator=(const TensorDesc&) = delete;
    cudnnTensorDescriptor_t get() const { return desc_; }

private:
    cudnnTensorDescriptor_t desc_ = nullptr;
};

// Weights k x c x h x w: kchw in memory (our oihw) for CUDNN_TENSOR_NCHW, khwc for
// CUDNN_TENSOR_NHWC (what cuDNN needs beside channels-last activations in backward).
class FilterDesc {
public:
    FilterDesc(int k, int c, int h, int w, cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW,
               cudnnDataType_t type = CUDNN_DATA_FLOAT);
    ~FilterDesc();
    FilterDesc(const FilterDesc&) = delete;
    FilterDesc& operator=(const FilterDesc&) = delete;
    cudnnFilterDescriptor_t get() const { return desc_; }

private:
    cudnnFilterDescriptor_t desc_ = nullptr;
};

class ConvDesc {
public:
    // Products summed in float32 whatever the operands' type (for half and bfloat16 operands,
    // cuDNN's PSEUDO_HALF_CONFIG and PSEUDO_BFLOAT16_CONFIG), under `math`: CUDNN_FMA_MATH (no
    // tensor cores), CUDNN_DEFAULT_MATH (TF32 tensor cores for float operands) or
    // CUDNN_TENSOR_OP_MATH (half or bfloat16 tensor cores for 16-bit operands).
    ConvDesc(const Conv2dConfig& c, cudnnMathType_t math);
    ~ConvDesc();
    ConvDesc(const ConvDesc&) = delete;
    ConvDesc& operator=(const ConvDesc&) = delete;
    cudnnConvolutionDescriptor_t get() const { return desc_; }

private:
    cudnnConvolutionDescriptor_t desc_ = nullptr;
};

// Checks that `t` is defined, on `device`, of dtype `dtype`, with `numel` elements (when
// numel >= 0), and returns its device address. `what` names the kernel and the argument.
void* device_ptr(const Tensor& t, const CudaDevice& device, DType dtype, std::int64_t numel,
                 std::string_view what);
inline float* float_ptr(const Tensor& t, const CudaDevice& device, std::int64_t numel,
                        std::string_view what) {
    return static_cast<float*>(device_ptr(t, device, DType::f32, numel, what));
}

}  // namespace tandem::cuda

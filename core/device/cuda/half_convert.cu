// Conversions between float32 and the 16-bit operands of mixed precision (kernels.cuh), with
// CUDA's own conversions (round to nearest even), launched as launch.cuh says.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "device/cuda/kernels.cuh"
#include "device/cuda/launch.cuh"

namespace tandem::cuda::kernels {
namespace {

// The two formats behind one set of kernels: each is a 16-bit struct, read and written
// through the caller's 16-bit words.
__device__ __half narrowed(float x, __half) {
    return __float2half_rn(x);
}
__device__ __nv_bfloat16 narrowed(float x, __nv_bfloat16) {
    return __float2bfloat16_rn(x);
}
__device__ float widened(__half h) {
    return __half2float(h);
}
__device__ float widened(__nv_bfloat16 h) {
    return __bfloat162float(h);
}

static_assert(sizeof(__half) == sizeof(std::uint16_t) &&
              sizeof(__nv_bfloat16) == sizeof(std::uint16_t));

template <class Half>
__global__ void narrow_kernel(const float* x, Half* h, std::int64_t n) {
    TANDEM_GRID_STRIDE(i, n) h[i] = narrowed(x[i], Half());
}

template <class Half>
__global__ void widen_kernel(const Half* h, float* z, std::int64_t n) {
    TANDEM_GRID_STRIDE(i, n) z[i] = widened(h[i]);
}

template <class Half>
__global__ void add_widened_kernel(const Half* h, float* z, std::int64_t n) {
    TANDEM_GRID_STRIDE(i, n) z[i] += widened(h[i]);
}

// Runs `launch` with a value of the 16-bit type `format` names (its type picks the kernels).
template <class Launch>
void for_format(HalfFormat format, Launch launch) {
    if (format == HalfFormat::fp16)
        launch(__half());
    else
        launch(__nv_bfloat16());
}

}  // namespace

void narrow(HalfFormat format, const float* src, std::uint16_t* halves, std::int64_t n,
            cudaStream_t stream) {
    for_format(format, [&](auto half) {
        using Half = decltype(half);
        narrow_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, reinterpret_cast<Half*>(halves),
                                                              n);
    });
}

void widen(HalfFormat format, const std::uint16_t* halves, float* dst, std::int64_t n,
           cudaStream_t stream) {
    for_format(format, [&](auto half) {
        using Half = decltype(half);
        widen_kernel<<<blocks_for(n), kThreads, 0, stream>>>(reinterpret_cast<const Half*>(halves),
                                                             dst, n);
    });
}

void add_widened(HalfFormat format, const std::uint16_t* halves, float* dst, std::int64_t n,
                 cudaStream_t stream) {
    for_format(format, [&](auto half) {
        using Half = decltype(half);
        add_widened_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
            reinterpret_cast<const Half*>(halves), dst, n);
    });
}

}  // namespace tandem::cuda::kernels

// How the CUDA backend's own kernels (kernels.cu, attention.cu) are launched: grid-stride loops
// over 64-bit indices, 256 threads per block and at most 65535 blocks (enough to fill any
// current GPU).
#pragma once

#include <cstdint>

namespace tandem::cuda::kernels {

constexpr int kThreads = 256;

inline unsigned blocks_for(std::int64_t n) {
    const std::int64_t b = (n + kThreads - 1) / kThreads;
    return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

}  // namespace tandem::cuda::kernels

#define TANDEM_GRID_STRIDE(i, n)                                                        \
    for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
         i += std::int64_t(gridDim.x) * blockDim.x)

// Loss scaling's unscale on the GPU (kernels.cuh): each gradient divided by the scale in place,
// and a flag raised where a result is not finite, so one read of the flag answers for every
// gradient of a stage (PyTorch's GradScaler does the same in one fused pass).
#include "device/cuda/kernels.cuh"
#include "device/cuda/launch.cuh"

namespace tandem::cuda::kernels {
namespace {

__global__ void unscale_kernel(float* z, float factor, std::int64_t n, int* nonfinite) {
    TANDEM_GRID_STRIDE(i, n) {
        const float v = z[i] * factor;
        z[i] = v;
        // Every thread that finds one writes the same value: no atomic needed.
        if (!isfinite(v)) *nonfinite = 1;
    }
}

}  // namespace

void unscale(float* dst, float factor, std::int64_t n, int* nonfinite, cudaStream_t stream) {
    unscale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, factor, n, nonfinite);
}

}  // namespace tandem::cuda::kernels

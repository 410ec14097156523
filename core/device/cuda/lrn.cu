// The CUDA backend's local response normalisation (kernels.cuh), a pixel per thread over the
// shared per-pixel definitions, apart from kernels.cu to keep each file to one job.
#include "device/cuda/kernels.cuh"
#include "device/cuda/launch.cuh"

namespace tandem::cuda::kernels {
namespace {

__global__ void lrn_forward_kernel(lrn::Shape s, const float* x, float* y, float* scale) {
    TANDEM_GRID_STRIDE(p, s.pixels()) {
        const std::int64_t b = s.base(p);
        lrn::forward_pixel(s, x + b, y + b, scale ? scale + b : nullptr);
    }
}

__global__ void lrn_backward_kernel(lrn::Shape s, const float* x, const float* dy,
                                    const float* scale, float* dx) {
    TANDEM_GRID_STRIDE(p, s.pixels()) {
        const std::int64_t b = s.base(p);
        lrn::backward_pixel(s, x + b, dy + b, scale + b, dx + b);
    }
}

}  // namespace

void lrn_forward(const lrn::Shape& s, const float* src, float* dst, float* scale,
                 cudaStream_t stream) {
    lrn_forward_kernel<<<blocks_for(s.pixels()), kThreads, 0, stream>>>(s, src, dst, scale);
}

void lrn_backward(const lrn::Shape& s, const float* src, const float* diff_dst, const float* scale,
                  float* diff_src, cudaStream_t stream) {
    lrn_backward_kernel<<<blocks_for(s.pixels()), kThreads, 0, stream>>>(s, src, diff_dst, scale,
                                                                         diff_src);
}

}  // namespace tandem::cuda::kernels

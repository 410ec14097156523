// The CUDA backend's pooling kernels (max and average, either layout; see kernels.cuh),
// apart from kernels.cu to keep each file to one job and under 500 lines.
#include <cfloat>

#include "device/cuda/kernels.cuh"
#include "device/cuda/launch.cuh"

namespace tandem::cuda::kernels {
namespace {

// Storage index of (b, ch, h, w) in a tensor of c channels and hh x ww pixels.
__device__ std::int64_t pool_at(std::int64_t b, std::int64_t ch, std::int64_t h, std::int64_t w,
                                std::int64_t c, std::int64_t hh, std::int64_t ww, bool nhwc) {
    return nhwc ? ((b * hh + h) * ww + w) * c + ch : ((b * c + ch) * hh + h) * ww + w;
}

struct Window {
    std::int64_t h0, h1, w0, w1, divisor;
};

// The reference kernel's window for output (oh, ow): clipped to the input; the divisor counts
// padding up to input + pad when count_include_pad.
__device__ Window pool_window(const PoolShape& s, std::int64_t oh, std::int64_t ow) {
    const std::int64_t hs = oh * s.stride_h - s.pad_h, ws = ow * s.stride_w - s.pad_w;
    const std::int64_t he = min(hs + s.kernel_h, s.h + s.pad_h);
    const std::int64_t we = min(ws + s.kernel_w, s.w + s.pad_w);
    Window win{max(hs, std::int64_t(0)), min(he, s.h), max(ws, std::int64_t(0)), min(we, s.w), 0};
    win.divisor =
        s.count_include_pad ? (he - hs) * (we - ws) : (win.h1 - win.h0) * (win.w1 - win.w0);
    return win;
}

__global__ void pool_forward_kernel(PoolShape s, const float* x, float* y, std::int32_t* arg) {
    const std::int64_t total = s.n * s.c * s.out_h * s.out_w;
    TANDEM_GRID_STRIDE(k, total) {  // k: logical (n, c, oh, ow) index, as the workspace
        const std::int64_t ow = k % s.out_w, oh = (k / s.out_w) % s.out_h;
        const std::int64_t ch = (k / (s.out_w * s.out_h)) % s.c, b = k / (s.out_w * s.out_h * s.c);
        const Window win = pool_window(s, oh, ow);
        float result;
        if (s.max) {
            float best = -FLT_MAX;
            std::int32_t best_at = -1;
            for (std::int64_t h = win.h0; h < win.h1; ++h)
                for (std::int64_t w = win.w0; w < win.w1; ++w) {
                    const float v = x[pool_at(b, ch, h, w, s.c, s.h, s.w, s.nhwc)];
                    if (v > best || best_at < 0) {
                        best = v;
                        best_at = static_cast<std::int32_t>(h * s.w + w);
                    }
                }
            result = best;
            if (arg) arg[k] = best_at;
        } else {
            double sum = 0;
            for (std::int64_t h = win.h0; h < win.h1; ++h)
                for (std::int64_t w = win.w0; w < win.w1; ++w)
                    sum += x[pool_at(b, ch, h, w, s.c, s.h, s.w, s.nhwc)];
            result = float(sum / double(win.divisor));
        }
        y[pool_at(b, ch, oh, ow, s.c, s.out_h, s.out_w, s.nhwc)] = result;
    }
}

// First and last output index along one axis whose window holds input position `i`.
__device__ void covering(std::int64_t i, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                         std::int64_t out, std::int64_t& lo, std::int64_t& hi) {
    // o * stride - pad <= i < o * stride - pad + kernel
    const std::int64_t a = i + pad - kernel + 1;
    lo = a <= 0 ? 0 : (a + stride - 1) / stride;
    hi = min((i + pad) / stride, out - 1);
}

__global__ void pool_backward_kernel(PoolShape s, const float* dy, const std::int32_t* arg,
                                     float* dx) {
    const std::int64_t total = s.n * s.c * s.h * s.w;
    TANDEM_GRID_STRIDE(e, total) {  // e: logical (n, c, h, w) index of the input
        const std::int64_t w = e % s.w, h = (e / s.w) % s.h;
        const std::int64_t ch = (e / (s.w * s.h)) % s.c, b = e / (s.w * s.h * s.c);
        std::int64_t oh0, oh1, ow0, ow1;
        covering(h, s.kernel_h, s.stride_h, s.pad_h, s.out_h, oh0, oh1);
        covering(w, s.kernel_w, s.stride_w, s.pad_w, s.out_w, ow0, ow1);
        float sum = 0;
        for (std::int64_t oh = oh0; oh <= oh1; ++oh)
            for (std::int64_t ow = ow0; ow <= ow1; ++ow) {
                const float g = dy[pool_at(b, ch, oh, ow, s.c, s.out_h, s.out_w, s.nhwc)];
                if (s.max) {
                    const std::int64_t k = ((b * s.c + ch) * s.out_h + oh) * s.out_w + ow;
                    if (arg[k] == h * s.w + w) sum += g;
                } else {
                    sum += g / float(pool_window(s, oh, ow).divisor);
                }
            }
        dx[pool_at(b, ch, h, w, s.c, s.h, s.w, s.nhwc)] = sum;
    }
}

}  // namespace

void pool_forward(const PoolShape& s, const float* src, float* dst, std::int32_t* argmax,
                  cudaStream_t stream) {
    pool_forward_kernel<<<blocks_for(s.n * s.c * s.out_h * s.out_w), kThreads, 0, stream>>>(
        s, src, dst, argmax);
}

void pool_backward(const PoolShape& s, const float* diff_dst, const std::int32_t* argmax,
                   float* diff_src, cudaStream_t stream) {
    pool_backward_kernel<<<blocks_for(s.n * s.c * s.h * s.w), kThreads, 0, stream>>>(
        s, diff_dst, argmax, diff_src);
}

}  // namespace tandem::cuda::kernels

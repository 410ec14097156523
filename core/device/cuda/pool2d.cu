// The CUDA backend's pooling kernels (max and average, either layout; see kernels.cuh),
// apart from kernels.cu to keep each file to one job and under 500 lines.
#include <algorithm>
#include <cfloat>
#include <limits>

#include "device/cuda/kernels.cuh"
#include "device/cuda/launch.cuh"

namespace tandem::cuda::kernels {
namespace {

// The kernels index in I: int where every index of the tensors fits, as it does for any
// layer short of 2^31 elements, else std::int64_t. A 64-bit division is a long software
// routine on a GPU, and these kernels take the index apart with several per element: on an
// H200, VGG-16's first pooling (batch 64) took 1.0 ms forward and 6.0 backward in 64 bits.
template <typename I>
struct Shape {
    I n, c, h, w, out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
    bool max, count_include_pad, nhwc;

    explicit Shape(const PoolShape& s)
        : n(I(s.n)), c(I(s.c)), h(I(s.h)), w(I(s.w)), out_h(I(s.out_h)), out_w(I(s.out_w)),
          kernel_h(I(s.kernel_h)), kernel_w(I(s.kernel_w)), stride_h(I(s.stride_h)),
          stride_w(I(s.stride_w)), pad_h(I(s.pad_h)), pad_w(I(s.pad_w)), max(s.max),
          count_include_pad(s.count_include_pad), nhwc(s.nhwc) {}
};

// Storage index of (b, ch, h, w) in a tensor of c channels and hh x ww pixels.
template <typename I>
__device__ I pool_at(I b, I ch, I h, I w, I c, I hh, I ww, bool nhwc) {
    return nhwc ? ((b * hh + h) * ww + w) * c + ch : ((b * c + ch) * hh + h) * ww + w;
}

// (b, ch, h, w) of storage index `at` in a tensor of c channels and hh x ww pixels: threads
// take consecutive storage indices, so neighbouring threads read neighbouring floats in
// either layout. (Taken in (n, c, h, w) order, channels-last reads were c floats apart: VGG-16's
// first pooling took 2.15 ms forward and 11.5 backward in nhwc against 0.50 and 2.36 in nchw.)
template <typename I>
__device__ void unravel(I at, I c, I hh, I ww, bool nhwc, I& b, I& ch, I& h, I& w) {
    if (nhwc) {
        ch = at % c, at /= c;
        w = at % ww, at /= ww;
        h = at % hh, b = at / hh;
    } else {
        w = at % ww, at /= ww;
        h = at % hh, at /= hh;
        ch = at % c, b = at / c;
    }
}

template <typename I>
struct Window {
    I h0, h1, w0, w1, divisor;
};

// The reference kernel's window for output (oh, ow): clipped to the input; the divisor counts
// padding up to input + pad when count_include_pad.
template <typename I>
__device__ Window<I> pool_window(const Shape<I>& s, I oh, I ow) {
    const I hs = oh * s.stride_h - s.pad_h, ws = ow * s.stride_w - s.pad_w;
    const I he = min(hs + s.kernel_h, s.h + s.pad_h);
    const I we = min(ws + s.kernel_w, s.w + s.pad_w);
    Window<I> win{max(hs, I(0)), min(he, s.h), max(ws, I(0)), min(we, s.w), 0};
    win.divisor =
        s.count_include_pad ? (he - hs) * (we - ws) : (win.h1 - win.h0) * (win.w1 - win.w0);
    return win;
}

template <typename I>
__global__ void pool_forward_kernel(Shape<I> s, const float* x, float* y, std::int32_t* arg) {
    const I total = s.n * s.c * s.out_h * s.out_w;
    // k: the output's storage index, and the workspace's
    for (I k = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); k < total;
         k += I(gridDim.x) * I(blockDim.x)) {
        I b, ch, oh, ow;
        unravel(k, s.c, s.out_h, s.out_w, s.nhwc, b, ch, oh, ow);
        const Window<I> win = pool_window(s, oh, ow);
        float result;
        if (s.max) {
            float best = -FLT_MAX;
            std::int32_t best_at = -1;
            for (I h = win.h0; h < win.h1; ++h)
                for (I w = win.w0; w < win.w1; ++w) {
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
            for (I h = win.h0; h < win.h1; ++h)
                for (I w = win.w0; w < win.w1; ++w)
                    sum += x[pool_at(b, ch, h, w, s.c, s.h, s.w, s.nhwc)];
            result = float(sum / double(win.divisor));
        }
        y[k] = result;
    }
}

// First and last output index along one axis whose window holds input position `i`.
template <typename I>
__device__ void covering(I i, I kernel, I stride, I pad, I out, I& lo, I& hi) {
    // o * stride - pad <= i < o * stride - pad + kernel
    const I a = i + pad - kernel + 1;
    lo = a <= 0 ? 0 : (a + stride - 1) / stride;
    hi = min((i + pad) / stride, out - 1);
}

template <typename I>
__global__ void pool_backward_kernel(Shape<I> s, const float* dy, const std::int32_t* arg,
                                     float* dx) {
    const I total = s.n * s.c * s.h * s.w;
    // e: the input's storage index
    for (I e = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); e < total;
         e += I(gridDim.x) * I(blockDim.x)) {
        I b, ch, h, w;
        unravel(e, s.c, s.h, s.w, s.nhwc, b, ch, h, w);
        I oh0, oh1, ow0, ow1;
        covering(h, s.kernel_h, s.stride_h, s.pad_h, s.out_h, oh0, oh1);
        covering(w, s.kernel_w, s.stride_w, s.pad_w, s.out_w, ow0, ow1);
        float sum = 0;
        for (I oh = oh0; oh <= oh1; ++oh)
            for (I ow = ow0; ow <= ow1; ++ow) {
                const I k = pool_at(b, ch, oh, ow, s.c, s.out_h, s.out_w, s.nhwc);
                const float g = dy[k];
                if (s.max) {
                    if (arg[k] == h * s.w + w) sum += g;
                } else {
                    sum += g / float(pool_window(s, oh, ow).divisor);
                }
            }
        dx[e] = sum;
    }
}

// Whether every index of the layer's input and output (and the grid's last stride past them)
// fits an int.
bool fits_int(const PoolShape& s) {
    const std::int64_t largest = std::max(s.n * s.c * s.h * s.w, s.n * s.c * s.out_h * s.out_w);
    return largest + std::int64_t(65535) * kThreads <= std::numeric_limits<int>::max();
}

}  // namespace

void pool_forward(const PoolShape& s, const float* src, float* dst, std::int32_t* argmax,
                  cudaStream_t stream) {
    const unsigned blocks = blocks_for(s.n * s.c * s.out_h * s.out_w);
    if (fits_int(s))
        pool_forward_kernel<<<blocks, kThreads, 0, stream>>>(Shape<int>(s), src, dst, argmax);
    else
        pool_forward_kernel<<<blocks, kThreads, 0, stream>>>(Shape<std::int64_t>(s), src, dst,
                                                             argmax);
}

void pool_backward(const PoolShape& s, const float* diff_dst, const std::int32_t* argmax,
                   float* diff_src, cudaStream_t stream) {
    const unsigned blocks = blocks_for(s.n * s.c * s.h * s.w);
    if (fits_int(s))
        pool_backward_kernel<<<blocks, kThreads, 0, stream>>>(Shape<int>(s), diff_dst, argmax,
                                                              diff_src);
    else
        pool_backward_kernel<<<blocks, kThreads, 0, stream>>>(Shape<std::int64_t>(s), diff_dst,
                                                              argmax, diff_src);
}

}  // namespace tandem::cuda::kernels

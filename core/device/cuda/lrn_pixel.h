// Local response normalisation across channels, one pixel at a time: the math of the CUDA
// backend's own LRN kernel (kernels.cu), which runs the windows cuDNN cannot (plan.h:
// lrn_unsupported). Plain C++ that nvcc compiles for the GPU and the host compiler for the
// CPU-side test, which holds it to the reference kernel on the host.
//
// PyTorch's window: channel c sums x^2 over channels c - size/2 .. c + (size-1)/2, clipped to
// the tensor; s_c = k + alpha / size * that sum, and y_c = x_c * s_c^-beta. One thread walks
// the channels of one pixel, recomputing each window's sum in float (size terms at most): no
// running sum to drift, and no state between pixels.
#pragma once

#include <math.h>

#include <cstdint>

#include "device/host_device.h"

namespace tandem::cuda::lrn {

struct Shape {
    std::int64_t n = 0, c = 0, hw = 0;  // batch, channels, height x width
    bool nhwc = false;                  // channels_last storage
    std::int64_t size = 1;              // channels in the window
    float alpha = 0, beta = 0, k = 0;

    TANDEM_HOST_DEVICE std::int64_t pixels() const { return n * hw; }
    // Where pixel p (image p / hw, spatial index p % hw) keeps channel 0, and the step between
    // its channels.
    TANDEM_HOST_DEVICE std::int64_t base(std::int64_t p) const {
        return nhwc ? p * c : (p / hw) * c * hw + p % hw;
    }
    TANDEM_HOST_DEVICE std::int64_t stride() const { return nhwc ? 1 : hw; }
};

// s_ch for the pixel whose channel 0 is x[0].
TANDEM_HOST_DEVICE inline float scale_at(const Shape& s, const float* x, std::int64_t ch) {
    const std::int64_t step = s.stride();
    const std::int64_t lo = ch - s.size / 2 > 0 ? ch - s.size / 2 : 0;
    const std::int64_t hi = ch + (s.size - 1) / 2 < s.c - 1 ? ch + (s.size - 1) / 2 : s.c - 1;
    float sum = 0;
    for (std::int64_t j = lo; j <= hi; ++j) sum += x[j * step] * x[j * step];
    return s.k + s.alpha / float(s.size) * sum;
}

// y = x s^-beta over one pixel's channels; its scales into `scale` when given (training).
TANDEM_HOST_DEVICE inline void forward_pixel(const Shape& s, const float* x, float* y,
                                             float* scale) {
    const std::int64_t step = s.stride();
    for (std::int64_t ch = 0; ch < s.c; ++ch) {
        const float sc = scale_at(s, x, ch);
        y[ch * step] = x[ch * step] * powf(sc, -s.beta);
        if (scale) scale[ch * step] = sc;
    }
}

// With the scales of forward:
//   dx_j = dy_j s_j^-beta - 2 alpha beta / size * x_j * sum_{i : j in W(i)} dy_i x_i s_i^(-beta-1)
// where i's window holds j exactly when i lies in j - (size-1)/2 .. j + size/2.
TANDEM_HOST_DEVICE inline void backward_pixel(const Shape& s, const float* x, const float* dy,
                                              const float* scale, float* dx) {
    const std::int64_t step = s.stride();
    const float factor = 2 * s.alpha * s.beta / float(s.size);
    for (std::int64_t j = 0; j < s.c; ++j) {
        const std::int64_t lo = j - (s.size - 1) / 2 > 0 ? j - (s.size - 1) / 2 : 0;
        const std::int64_t hi = j + s.size / 2 < s.c - 1 ? j + s.size / 2 : s.c - 1;
        float sum = 0;
        for (std::int64_t i = lo; i <= hi; ++i)
            sum += dy[i * step] * x[i * step] * powf(scale[i * step], -s.beta - 1);
        dx[j * step] = dy[j * step] * powf(scale[j * step], -s.beta) - factor * x[j * step] * sum;
    }
}

}  // namespace tandem::cuda::lrn

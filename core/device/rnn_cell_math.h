// The LSTM and GRU cells, element by element: one definition that the CPU kernel and the CUDA
// kernel (kernels.cu) both run (RnnCellKernel in kernels/kernels.h states the equations).
//
// Sample b, unit j of `hidden` units: gate k's value for it lies at b * G * hidden + k * hidden
// + j in gx, gh (G gates) and at b * 4 * hidden + k * hidden + j in saved (4 entries: the LSTM's
// i, f, g, o; the GRU's r, z, n and gh_n).
//
// On a GPU the exponential and tanh are CUDA's; on the CPU they are the arithmetic below, which
// the compiler vectorises across units (a loop calling libm's expf and tanhf stays scalar, and
// those calls were a third of an LSTM step at hidden 128).
#pragma once

#include <math.h>

#include <cstdint>
#include <cstring>

#include "device/host_device.h"

namespace tandem::rnn_cell {

#if !defined(__CUDA_ARCH__)
// e^x within about 2 ulp: x = n ln 2 + r with |r| <= ln 2 / 2, e^r by Cephes' expf polynomial,
// 2^n built in the exponent bits. Saturates below e^-87 (about 1e-38) and above e^88 (3e38)
// instead of reaching 0 and infinity, which the gates' 1 / (1 + e^x) do not notice; a NaN
// stays NaN.
inline float exp_approx(float x) {
    x = x < -87.f ? -87.f : x;
    x = x > 88.f ? 88.f : x;
    // Rounded to the nearest whole number by adding and taking away 1.5 x 2^23 (floorf is a
    // libm call GCC does not vectorise unless traps are off).
    const float n = (x * 1.44269504088896341f + 12582912.f) - 12582912.f;
    const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float er = p * r * r + r + 1.f;
    // n is a whole number in [-125, 127] (0 for a NaN, whose er is NaN already).
    const std::uint32_t bits =
        static_cast<std::uint32_t>(static_cast<std::int32_t>(n == n ? n : 0.f) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return er * scale;
}

// tanh x within a few ulp: Cephes' odd polynomial below |x| = 0.625, where 1 - 2 / (e^2x + 1)
// would lose the small result's digits, and that form above.
inline float tanh_approx(float x) {
    const float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const float small = p * z * x + x;
    const float a = fabsf(x);
    const float large = 1.f - 2.f / (exp_approx(a + a) + 1.f);
    return a < 0.625f ? small : copysignf(large, x);
}
#endif

TANDEM_HOST_DEVICE inline float tanh_of(float x) {
#if defined(__CUDA_ARCH__)
    return tanhf(x);
#else
    return tanh_approx(x);
#endif
}

TANDEM_HOST_DEVICE inline float sigmoid(float x) {
#if defined(__CUDA_ARCH__)
    return 1.f / (1.f + expf(-x));
#else
    return 1.f / (1.f + exp_approx(-x));
#endif
}

// One unit's step. `b`: sample, `j`: unit.
TANDEM_HOST_DEVICE inline void lstm_forward(std::int64_t b, std::int64_t j, std::int64_t hidden,
                                            const float* gx, const float* gh, const float* c_prev,
                                            float* h, float* c, float* saved) {
    const float* x = gx + b * 4 * hidden + j;
    const float* y = gh + b * 4 * hidden + j;
    const float i = sigmoid(x[0] + y[0]);
    const float f = sigmoid(x[hidden] + y[hidden]);
    const float g = tanh_of(x[2 * hidden] + y[2 * hidden]);
    const float o = sigmoid(x[3 * hidden] + y[3 * hidden]);
    const std::int64_t at = b * hidden + j;
    const float cell = f * c_prev[at] + i * g;
    c[at] = cell;
    h[at] = o * tanh_of(cell);
    float* s = saved + b * 4 * hidden + j;
    s[0] = i;
    s[hidden] = f;
    s[2 * hidden] = g;
    s[3 * hidden] = o;
}

TANDEM_HOST_DEVICE inline void lstm_backward(std::int64_t b, std::int64_t j, std::int64_t hidden,
                                             const float* saved, const float* c_prev,
                                             const float* c, const float* dh, const float* dc,
                                             float* dgx, float* dgh, float* dh_prev,
                                             float* dc_prev) {
    const float* s = saved + b * 4 * hidden + j;
    const float i = s[0], f = s[hidden], g = s[2 * hidden], o = s[3 * hidden];
    const std::int64_t at = b * hidden + j;
    const float tanh_c = tanh_of(c[at]);
    const float dc_total = dc[at] + dh[at] * o * (1.f - tanh_c * tanh_c);
    const float pre[4] = {dc_total * g * i * (1.f - i), dc_total * c_prev[at] * f * (1.f - f),
                          dc_total * i * (1.f - g * g), dh[at] * tanh_c * o * (1.f - o)};
    for (int k = 0; k < 4; ++k) {
        dgx[b * 4 * hidden + k * hidden + j] = pre[k];
        dgh[b * 4 * hidden + k * hidden + j] = pre[k];
    }
    dc_prev[at] = dc_total * f;
    dh_prev[at] = 0.f;
}

TANDEM_HOST_DEVICE inline void gru_forward(std::int64_t b, std::int64_t j, std::int64_t hidden,
                                           const float* gx, const float* gh, const float* h_prev,
                                           float* h, float* saved) {
    const float* x = gx + b * 3 * hidden + j;
    const float* y = gh + b * 3 * hidden + j;
    const float r = sigmoid(x[0] + y[0]);
    const float z = sigmoid(x[hidden] + y[hidden]);
    const float gh_n = y[2 * hidden];
    const float n = tanh_of(x[2 * hidden] + r * gh_n);
    const std::int64_t at = b * hidden + j;
    h[at] = (1.f - z) * n + z * h_prev[at];
    float* s = saved + b * 4 * hidden + j;
    s[0] = r;
    s[hidden] = z;
    s[2 * hidden] = n;
    s[3 * hidden] = gh_n;
}

TANDEM_HOST_DEVICE inline void gru_backward(std::int64_t b, std::int64_t j, std::int64_t hidden,
                                            const float* saved, const float* h_prev,
                                            const float* dh, float* dgx, float* dgh,
                                            float* dh_prev) {
    const float* s = saved + b * 4 * hidden + j;
    const float r = s[0], z = s[hidden], n = s[2 * hidden], gh_n = s[3 * hidden];
    const std::int64_t at = b * hidden + j;
    const float dn_pre = dh[at] * (1.f - z) * (1.f - n * n);
    const float dz_pre = dh[at] * (h_prev[at] - n) * z * (1.f - z);
    const float dr_pre = dn_pre * gh_n * r * (1.f - r);
    float* x = dgx + b * 3 * hidden + j;
    float* y = dgh + b * 3 * hidden + j;
    x[0] = y[0] = dr_pre;
    x[hidden] = y[hidden] = dz_pre;
    x[2 * hidden] = dn_pre;
    y[2 * hidden] = dn_pre * r;
    dh_prev[at] = dh[at] * z;
}

}  // namespace tandem::rnn_cell

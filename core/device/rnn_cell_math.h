// The LSTM and GRU cells, element by element: one definition that the CPU kernel and the CUDA
// kernel (kernels.cu) both run (RnnCellKernel in kernels/kernels.h states the equations).
//
// Sample b, unit j of `hidden` units: gate k's value for it lies at b * G * hidden + k * hidden
// + j in gx, gh (G gates) and at b * 4 * hidden + k * hidden + j in saved (4 entries: the LSTM's
// i, f, g, o; the GRU's r, z, n and gh_n).
#pragma once

#include <math.h>

#include <cstdint>

#include "device/host_device.h"

namespace tandem::rnn_cell {

TANDEM_HOST_DEVICE inline float sigmoid(float x) {
    return 1.f / (1.f + expf(-x));
}

// One unit's step. `b`: sample, `j`: unit.
TANDEM_HOST_DEVICE inline void lstm_forward(std::int64_t b, std::int64_t j, std::int64_t hidden,
                                            const float* gx, const float* gh, const float* c_prev,
                                            float* h, float* c, float* saved) {
    const float* x = gx + b * 4 * hidden + j;
    const float* y = gh + b * 4 * hidden + j;
    const float i = sigmoid(x[0] + y[0]);
    const float f = sigmoid(x[hidden] + y[hidden]);
    const float g = tanhf(x[2 * hidden] + y[2 * hidden]);
    const float o = sigmoid(x[3 * hidden] + y[3 * hidden]);
    const std::int64_t at = b * hidden + j;
    const float cell = f * c_prev[at] + i * g;
    c[at] = cell;
    h[at] = o * tanhf(cell);
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
    const float tanh_c = tanhf(c[at]);
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
    const float n = tanhf(x[2 * hidden] + r * gh_n);
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

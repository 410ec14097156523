// Softmax and layer norm, one row at a time: one definition that the CPU kernels and the CUDA
// kernels (kernels.cu) both run. A row is `size` elements `inner` apart (softmax along any
// dimension of either layout: layers/slice.h's DimensionSpan) or `cols` contiguous ones
// (layer norm over the trailing dimensions). Sums are in float, after subtracting the row's
// maximum (softmax) or mean (layer norm).
#pragma once

#include <math.h>

#include <cstdint>

#include "device/host_device.h"

namespace tandem::row_math {

// y = softmax(x) (log_softmax when `log`) along the row.
TANDEM_HOST_DEVICE inline void softmax_forward(const float* x, float* y, std::int64_t size,
                                               std::int64_t inner, bool log) {
    float top = x[0];
    for (std::int64_t s = 1; s < size; ++s) top = fmaxf(top, x[s * inner]);
    float sum = 0;
    for (std::int64_t s = 0; s < size; ++s) sum += expf(x[s * inner] - top);
    const float log_sum = logf(sum);
    for (std::int64_t s = 0; s < size; ++s) {
        const float shifted = x[s * inner] - top;
        y[s * inner] = log ? shifted - log_sum : expf(shifted) / sum;
    }
}

// dx from y (forward's output) and dy: softmax y (dy - <dy, y>); log_softmax dy - e^y sum(dy).
TANDEM_HOST_DEVICE inline void softmax_backward(const float* y, const float* dy, float* dx,
                                                std::int64_t size, std::int64_t inner, bool log) {
    float dot = 0;
    for (std::int64_t s = 0; s < size; ++s)
        dot += log ? dy[s * inner] : dy[s * inner] * y[s * inner];
    for (std::int64_t s = 0; s < size; ++s) {
        const std::int64_t at = s * inner;
        dx[at] = log ? dy[at] - expf(y[at]) * dot : y[at] * (dy[at] - dot);
    }
}

// y = (x - mean) / sqrt(var + eps) * gamma + beta (biased variance; gamma, beta null without
// affine); keeps the row's mean and 1/sqrt(var + eps) for backward.
TANDEM_HOST_DEVICE inline void layer_norm_forward(const float* x, float* y, const float* gamma,
                                                  const float* beta, std::int64_t cols, float eps,
                                                  float* mean, float* rstd) {
    float m = 0;
    for (std::int64_t c = 0; c < cols; ++c) m += x[c];
    m /= static_cast<float>(cols);
    float var = 0;
    for (std::int64_t c = 0; c < cols; ++c) var += (x[c] - m) * (x[c] - m);
    var /= static_cast<float>(cols);
    const float r = 1.f / sqrtf(var + eps);
    for (std::int64_t c = 0; c < cols; ++c) {
        const float normal = (x[c] - m) * r;
        y[c] = gamma ? normal * gamma[c] + beta[c] : normal;
    }
    *mean = m;
    *rstd = r;
}

// dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy * gamma, xhat = (x - mean) rstd.
TANDEM_HOST_DEVICE inline void layer_norm_backward(const float* x, const float* dy,
                                                   const float* gamma, std::int64_t cols,
                                                   float mean, float rstd, float* dx) {
    float sum_g = 0, sum_gx = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
        const float g = gamma ? dy[c] * gamma[c] : dy[c];
        sum_g += g;
        sum_gx += g * (x[c] - mean) * rstd;
    }
    const float mean_g = sum_g / static_cast<float>(cols),
                mean_gx = sum_gx / static_cast<float>(cols);
    for (std::int64_t c = 0; c < cols; ++c) {
        const float g = gamma ? dy[c] * gamma[c] : dy[c];
        dx[c] = rstd * (g - mean_g - (x[c] - mean) * rstd * mean_gx);
    }
}

// Column c's parameter gradients over every row, added: dgamma += sum dy xhat, dbeta += sum dy.
TANDEM_HOST_DEVICE inline void layer_norm_parameter_grads(const float* x, const float* dy,
                                                          const float* mean, const float* rstd,
                                                          std::int64_t rows, std::int64_t cols,
                                                          std::int64_t c, float* dgamma,
                                                          float* dbeta) {
    float g = 0, b = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
        g += dy[r * cols + c] * (x[r * cols + c] - mean[r]) * rstd[r];
        b += dy[r * cols + c];
    }
    dgamma[c] += g;
    dbeta[c] += b;
}

}  // namespace tandem::row_math

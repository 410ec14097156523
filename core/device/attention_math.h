// The additive (Bahdanau) attention score and its gradients, one output element at a time: one
// definition that the CPU kernel (cpu/attention_cpu.cpp) and the CUDA kernels (cuda/attention.cu)
// both run (AttentionKernel in kernels/attention_kernel.h states the contract).
//
// query q: batch x queries x hidden, key k: batch x keys x hidden, v: hidden, scores and their
// gradient ds: batch x queries x keys, all row-major. With t = tanh(q[b,i,:] + k[b,j,:]):
//   s[b,i,j] = sum_h v[h] t[h]
//   dq[b,i,h] = v[h] sum_j ds[b,i,j] (1 - t[h]^2),  dk[b,j,h] = v[h] sum_i ds[b,i,j] (1 - t[h]^2)
//   dv[h] = sum_{b,i,j} ds[b,i,j] t[h]
// Each function computes one output element from its own sums, so no two threads write one
// place and the result does not depend on the order threads run in.
#pragma once

#include <math.h>

#include <cstdint>

#include "device/host_device.h"

namespace tandem::attention_math {

struct Sizes {
    std::int64_t batch, queries, keys, hidden;
};

// Score (b, i, j).
TANDEM_HOST_DEVICE inline float additive_score(const float* q, const float* k, const float* v,
                                               const Sizes& s, std::int64_t b, std::int64_t i,
                                               std::int64_t j) {
    const float* qi = q + (b * s.queries + i) * s.hidden;
    const float* kj = k + (b * s.keys + j) * s.hidden;
    float sum = 0;
    for (std::int64_t h = 0; h < s.hidden; ++h) sum += v[h] * tanhf(qi[h] + kj[h]);
    return sum;
}

// dq[b, i, h].
TANDEM_HOST_DEVICE inline float additive_query_grad(const float* q, const float* k, const float* v,
                                                    const float* ds, const Sizes& s, std::int64_t b,
                                                    std::int64_t i, std::int64_t h) {
    const float qh = q[(b * s.queries + i) * s.hidden + h];
    const float* row = ds + (b * s.queries + i) * s.keys;
    float sum = 0;
    for (std::int64_t j = 0; j < s.keys; ++j) {
        const float t = tanhf(qh + k[(b * s.keys + j) * s.hidden + h]);
        sum += row[j] * (1.f - t * t);
    }
    return v[h] * sum;
}

// dk[b, j, h].
TANDEM_HOST_DEVICE inline float additive_key_grad(const float* q, const float* k, const float* v,
                                                  const float* ds, const Sizes& s, std::int64_t b,
                                                  std::int64_t j, std::int64_t h) {
    const float kh = k[(b * s.keys + j) * s.hidden + h];
    float sum = 0;
    for (std::int64_t i = 0; i < s.queries; ++i) {
        const float t = tanhf(q[(b * s.queries + i) * s.hidden + h] + kh);
        sum += ds[(b * s.queries + i) * s.keys + j] * (1.f - t * t);
    }
    return v[h] * sum;
}

// dv[h]'s whole sum (the caller adds it).
TANDEM_HOST_DEVICE inline float additive_v_grad(const float* q, const float* k, const float* ds,
                                                const Sizes& s, std::int64_t h) {
    float sum = 0;
    for (std::int64_t b = 0; b < s.batch; ++b)
        for (std::int64_t i = 0; i < s.queries; ++i) {
            const float qh = q[(b * s.queries + i) * s.hidden + h];
            const float* row = ds + (b * s.queries + i) * s.keys;
            for (std::int64_t j = 0; j < s.keys; ++j)
                sum += row[j] * tanhf(qh + k[(b * s.keys + j) * s.hidden + h]);
        }
    return sum;
}

// Whether key j is hidden from query i under a causal mask (PyTorch's is_causal, top-left aligned).
TANDEM_HOST_DEVICE inline bool causal_hidden(std::int64_t i, std::int64_t j) {
    return j > i;
}

}  // namespace tandem::attention_math

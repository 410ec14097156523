// The attention layers' own CUDA kernels (attention.cu): raw pointers, sizes and a stream only,
// launched asynchronously; the caller checks cudaGetLastError after each launch. The math is
// device/attention_math.h's, which the CPU kernel runs too.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device/attention_math.h"

namespace tandem::cuda::kernels {

// scores (batch x queries x keys): keys after their query set to -infinity.
void attention_mask_future(float* scores, std::int64_t batch, std::int64_t queries,
                           std::int64_t keys, cudaStream_t stream);
// scores = sum_h v[h] tanh(q + k), one thread per score.
void additive_scores(const float* q, const float* k, const float* v, float* scores,
                     const attention_math::Sizes& s, cudaStream_t stream);
// dq, dk overwritten (one thread per element), dv added into (one thread per hidden unit).
void additive_scores_backward(const float* q, const float* k, const float* v, const float* ds,
                              float* dq, float* dk, float* dv, const attention_math::Sizes& s,
                              cudaStream_t stream);

}  // namespace tandem::cuda::kernels

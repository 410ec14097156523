// The attention layers' CUDA kernels (attention.cuh): attention_math.h's element functions in
// grid-stride loops (launch.cuh).
#include <cfloat>

#include "device/cuda/attention.cuh"
#include "device/cuda/launch.cuh"

namespace tandem::cuda::kernels {
namespace {

__global__ void mask_future_kernel(float* scores, std::int64_t batch, std::int64_t queries,
                                   std::int64_t keys) {
    TANDEM_GRID_STRIDE(at, batch * queries * keys) {
        const std::int64_t j = at % keys, i = (at / keys) % queries;
        if (attention_math::causal_hidden(i, j)) scores[at] = -INFINITY;
    }
}

__global__ void additive_scores_kernel(const float* q, const float* k, const float* v,
                                       float* scores, attention_math::Sizes s) {
    TANDEM_GRID_STRIDE(at, s.batch * s.queries * s.keys) {
        const std::int64_t j = at % s.keys, i = (at / s.keys) % s.queries,
                           b = at / (s.keys * s.queries);
        scores[at] = attention_math::additive_score(q, k, v, s, b, i, j);
    }
}

__global__ void additive_query_grad_kernel(const float* q, const float* k, const float* v,
                                           const float* ds, float* dq, attention_math::Sizes s) {
    TANDEM_GRID_STRIDE(at, s.batch * s.queries * s.hidden) {
        const std::int64_t h = at % s.hidden, i = (at / s.hidden) % s.queries,
                           b = at / (s.hidden * s.queries);
        dq[at] = attention_math::additive_query_grad(q, k, v, ds, s, b, i, h);
    }
}

__global__ void additive_key_grad_kernel(const float* q, const float* k, const float* v,
                                         const float* ds, float* dk, attention_math::Sizes s) {
    TANDEM_GRID_STRIDE(at, s.batch * s.keys * s.hidden) {
        const std::int64_t h = at % s.hidden, j = (at / s.hidden) % s.keys,
                           b = at / (s.hidden * s.keys);
        dk[at] = attention_math::additive_key_grad(q, k, v, ds, s, b, j, h);
    }
}

__global__ void additive_v_grad_kernel(const float* q, const float* k, const float* ds, float* dv,
                                       attention_math::Sizes s) {
    TANDEM_GRID_STRIDE(h, s.hidden) dv[h] += attention_math::additive_v_grad(q, k, ds, s, h);
}

}  // namespace

void attention_mask_future(float* scores, std::int64_t batch, std::int64_t queries,
                           std::int64_t keys, cudaStream_t stream) {
    mask_future_kernel<<<blocks_for(batch * queries * keys), kThreads, 0, stream>>>(scores, batch,
                                                                                    queries, keys);
}

void additive_scores(const float* q, const float* k, const float* v, float* scores,
                     const attention_math::Sizes& s, cudaStream_t stream) {
    additive_scores_kernel<<<blocks_for(s.batch * s.queries * s.keys), kThreads, 0, stream>>>(
        q, k, v, scores, s);
}

void additive_scores_backward(const float* q, const float* k, const float* v, const float* ds,
                              float* dq, float* dk, float* dv, const attention_math::Sizes& s,
                              cudaStream_t stream) {
    additive_query_grad_kernel<<<blocks_for(s.batch * s.queries * s.hidden), kThreads, 0, stream>>>(
        q, k, v, ds, dq, s);
    additive_key_grad_kernel<<<blocks_for(s.batch * s.keys * s.hidden), kThreads, 0, stream>>>(
        q, k, v, ds, dk, s);
    // One thread per hidden unit sums over every score: no atomics, so the same bits each run.
    additive_v_grad_kernel<<<blocks_for(s.hidden), kThreads, 0, stream>>>(q, k, ds, dv, s);
}

}  // namespace tandem::cuda::kernels

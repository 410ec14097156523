// AttentionKernel: the device-specific half of the attention layers
// (scaled_dot_product_attention.h, additive_attention.h), in its own header rather than kernels.h
// so that adding it rebuilt only what uses it (issue 18).
//
// Every tensor is contiguous and row-major; a "batch of matrices" is `batch` matrices one after
// another. The softmax over the keys is the SoftmaxKernel (kernels.h), and the additive layer's
// projections are LinearKernels: what is here is only what those do not cover.
#pragma once

#include <compare>
#include <cstdint>

#include "tensor/tensor.h"

namespace tandem {

// c[b] = alpha op(a[b]) op(b[b]) (+ c[b] when accumulate), for b < batch, with op(a) m x k and
// op(b) k x n. a[b] is stored m x k, or k x m when transpose_a; b[b] k x n, or n x k when
// transpose_b; c[b] m x n.
struct BatchedProduct {
    std::int64_t batch = 1, m = 0, n = 0, k = 0;
    bool transpose_a = false, transpose_b = false;
    float alpha = 1;
    bool accumulate = false;
};

// The sizes of an additive (Bahdanau) score: `batch` sequences, `queries` x `keys` scores each,
// over `hidden` units.
struct AdditiveScoreShape {
    std::int64_t batch = 0, queries = 0, keys = 0, hidden = 0;
};

// No sizes: they come with each call (a layer asks for several products of different shapes).
struct AttentionConfig {
    auto operator<=>(const AttentionConfig&) const = default;
};

struct AttentionKernel {
    static constexpr const char* kName = "Attention";
    using Config = AttentionConfig;
    virtual ~AttentionKernel() = default;

    // c = alpha op(a) op(b) (+ c), as BatchedProduct says; a, b, c hold exactly the matrices.
    virtual void batched_product(const Tensor& a, const Tensor& b, Tensor& c,
                                 const BatchedProduct& p) = 0;

    // scores: batch x queries x keys. Sets the entries of keys j > query i to -infinity, so that
    // the softmax gives them weight 0 (PyTorch's is_causal: the mask aligned at the top left).
    virtual void mask_future(Tensor& scores, std::int64_t batch, std::int64_t queries,
                             std::int64_t keys) = 0;

    // scores[b,i,j] = sum_h v[h] tanh(query[b,i,h] + key[b,j,h]) (device/attention_math.h);
    // query: batch x queries x hidden, key: batch x keys x hidden, v: hidden.
    virtual void additive_scores(const Tensor& query, const Tensor& key, const Tensor& v,
                                 Tensor& scores, const AdditiveScoreShape& s) = 0;
    // From diff_scores (batch x queries x keys): diff_query and diff_key overwritten, diff_v ADDED
    // into. tanh is recomputed rather than kept: it would take batch x queries x keys x hidden
    // floats.
    virtual void additive_scores_backward(const Tensor& query, const Tensor& key, const Tensor& v,
                                          const Tensor& diff_scores, Tensor& diff_query,
                                          Tensor& diff_key, Tensor& diff_v,
                                          const AdditiveScoreShape& s) = 0;
};

}  // namespace tandem

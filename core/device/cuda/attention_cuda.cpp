// Attention on a GPU: the batched products are one cublasSgemmStridedBatched each; the causal
// mask and the additive scores are our kernels (attention.cu), on the compute stream.
//
// cuBLAS is column-major: a row-major m x n matrix is its n x m transpose there, so the row-major
// C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T, B and A swapped.
#include "device/cuda/attention_cuda.h"
#include "device/cuda/attention.cuh"
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/plan.h"

namespace tandem::cuda {
namespace {

class AttentionCuda final : public AttentionKernel {
public:
    explicit AttentionCuda(Device& device) : device_(as_cuda(device)) {}

    void batched_product(const Tensor& a, const Tensor& b, Tensor& c,
                         const BatchedProduct& p) override {
        const float* x = float_ptr(a, device_, p.batch * p.m * p.k, "Attention product a");
        const float* y = float_ptr(b, device_, p.batch * p.k * p.n, "Attention product b");
        float* z = float_ptr(c, device_, p.batch * p.m * p.n, "Attention product c");
        const int m = checked_int(p.m, "attention product rows"),
                  n = checked_int(p.n, "attention product columns");
        const int k = checked_int(p.k, "attention product inner size");
        const int batch = checked_int(p.batch, "attention product batch");
        const float beta = p.accumulate ? 1.f : 0.f;
        device_.activate();
        check_cublas(
            cublasSgemmStridedBatched(device_.cublas(), p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                      p.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &p.alpha,
                                      y, p.transpose_b ? k : n, p.k * p.n, x, p.transpose_a ? m : k,
                                      p.m * p.k, &beta, z, n, p.m * p.n, batch),
            "cublasSgemmStridedBatched (attention product)");
    }

    void mask_future(Tensor& scores, std::int64_t batch, std::int64_t queries,
                     std::int64_t keys) override {
        float* s = float_ptr(scores, device_, batch * queries * keys, "Attention scores");
        device_.activate();
        kernels::attention_mask_future(s, batch, queries, keys, device_.compute_stream());
        check_launch("attention_mask_future");
    }

    void additive_scores(const Tensor& query, const Tensor& key, const Tensor& v, Tensor& scores,
                         const AdditiveScoreShape& shape) override {
        const attention_math::Sizes s{shape.batch, shape.queries, shape.keys, shape.hidden};
        const float* q =
            float_ptr(query, device_, s.batch * s.queries * s.hidden, "AdditiveAttention query");
        const float* k =
            float_ptr(key, device_, s.batch * s.keys * s.hidden, "AdditiveAttention key");
        const float* w = float_ptr(v, device_, s.hidden, "AdditiveAttention v");
        float* out =
            float_ptr(scores, device_, s.batch * s.queries * s.keys, "AdditiveAttention scores");
        device_.activate();
        kernels::additive_scores(q, k, w, out, s, device_.compute_stream());
        check_launch("additive_scores");
    }

    void additive_scores_backward(const Tensor& query, const Tensor& key, const Tensor& v,
                                  const Tensor& diff_scores, Tensor& diff_query, Tensor& diff_key,
                                  Tensor& diff_v, const AdditiveScoreShape& shape) override {
        const attention_math::Sizes s{shape.batch, shape.queries, shape.keys, shape.hidden};
        const std::int64_t queries = s.batch * s.queries * s.hidden,
                           keys = s.batch * s.keys * s.hidden;
        const float* q = float_ptr(query, device_, queries, "AdditiveAttention query");
        const float* k = float_ptr(key, device_, keys, "AdditiveAttention key");
        const float* w = float_ptr(v, device_, s.hidden, "AdditiveAttention v");
        const float* ds = float_ptr(diff_scores, device_, s.batch * s.queries * s.keys,
                                    "AdditiveAttention diff_scores");
        float* dq = float_ptr(diff_query, device_, queries, "AdditiveAttention diff_query");
        float* dk = float_ptr(diff_key, device_, keys, "AdditiveAttention diff_key");
        float* dw = float_ptr(diff_v, device_, s.hidden, "AdditiveAttention diff_v");
        device_.activate();
        kernels::additive_scores_backward(q, k, w, ds, dq, dk, dw, s, device_.compute_stream());
        check_launch("additive_scores_backward");
    }

private:
    CudaDevice& device_;
};

}  // namespace

std::unique_ptr<AttentionKernel> make_attention_cuda(Device& device, const AttentionConfig&) {
    return std::make_unique<AttentionCuda>(device);
}

}  // namespace tandem::cuda

// Attention on the CPU: the batched products are oneDNN's row-major SGEMM (dnnl_sgemm), one call
// per matrix of the batch; the additive scores and the causal mask are device/attention_math.h's
// element functions, OpenMP across rows.
#include <dnnl.h>

#include <limits>

#include "base/error.h"
#include "device/attention_math.h"
#include "device/cpu/attention_cpu.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

class AttentionCpu final : public AttentionKernel {
public:
    void batched_product(const Tensor& a, const Tensor& b, Tensor& c,
                         const BatchedProduct& p) override {
        TANDEM_CHECK(a.numel() == p.batch * p.m * p.k && b.numel() == p.batch * p.k * p.n &&
                     c.numel() == p.batch * p.m * p.n)
            << "Attention batched_product: tensors of " << a.numel() << ", " << b.numel() << ", "
            << c.numel() << " elements for " << p.batch << " products of " << p.m << "x" << p.k
            << " by " << p.k << "x" << p.n;
        const float* x = a.data<float>();
        const float* y = b.data<float>();
        float* z = c.data<float>();
        const dnnl_dim_t lda = p.transpose_a ? p.m : p.k, ldb = p.transpose_b ? p.k : p.n;
        for (std::int64_t i = 0; i < p.batch; ++i) {
            const dnnl_status_t status =
                dnnl_sgemm(p.transpose_a ? 'T' : 'N', p.transpose_b ? 'T' : 'N', p.m, p.n, p.k,
                           p.alpha, x + i * p.m * p.k, lda, y + i * p.k * p.n, ldb,
                           p.accumulate ? 1.f : 0.f, z + i * p.m * p.n, p.n);
            TANDEM_CHECK_AS(BackendError, status == dnnl_success)
                << "dnnl_sgemm (attention product " << p.m << "x" << p.k << " by " << p.k << "x"
                << p.n << ") failed with oneDNN status " << static_cast<int>(status);
        }
    }

    void mask_future(Tensor& scores, std::int64_t batch, std::int64_t queries,
                     std::int64_t keys) override {
        float* s = scores.data<float>();
        const float hidden = -std::numeric_limits<float>::infinity();
        for (std::int64_t b = 0; b < batch; ++b)
            for (std::int64_t i = 0; i < queries; ++i)
                for (std::int64_t j = 0; j < keys; ++j)
                    if (attention_math::causal_hidden(i, j))
                        s[(b * queries + i) * keys + j] = hidden;
    }

    void additive_scores(const Tensor& query, const Tensor& key, const Tensor& v, Tensor& scores,
                         const AdditiveScoreShape& shape) override {
        const attention_math::Sizes s = sizes(shape);
        const float* q = query.data<float>();
        const float* k = key.data<float>();
        const float* w = v.data<float>();
        float* out = scores.data<float>();
        const std::int64_t rows = s.batch * s.queries;
#pragma omp parallel for if (rows * s.keys * s.hidden > kParallelMin)
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t j = 0; j < s.keys; ++j)
                out[r * s.keys + j] =
                    attention_math::additive_score(q, k, w, s, r / s.queries, r % s.queries, j);
    }

    void additive_scores_backward(const Tensor& query, const Tensor& key, const Tensor& v,
                                  const Tensor& diff_scores, Tensor& diff_query, Tensor& diff_key,
                                  Tensor& diff_v, const AdditiveScoreShape& shape) override {
        const attention_math::Sizes s = sizes(shape);
        const float* q = query.data<float>();
        const float* k = key.data<float>();
        const float* w = v.data<float>();
        const float* ds = diff_scores.data<float>();
        float* dq = diff_query.data<float>();
        float* dk = diff_key.data<float>();
        float* dw = diff_v.data<float>();
        const bool team = s.batch * s.queries * s.keys * s.hidden > kParallelMin;
        const std::int64_t query_rows = s.batch * s.queries, key_rows = s.batch * s.keys;
#pragma omp parallel for if (team)
        for (std::int64_t r = 0; r < query_rows; ++r)
            for (std::int64_t h = 0; h < s.hidden; ++h)
                dq[r * s.hidden + h] = attention_math::additive_query_grad(
                    q, k, w, ds, s, r / s.queries, r % s.queries, h);
#pragma omp parallel for if (team)
        for (std::int64_t r = 0; r < key_rows; ++r)
            for (std::int64_t h = 0; h < s.hidden; ++h)
                dk[r * s.hidden + h] =
                    attention_math::additive_key_grad(q, k, w, ds, s, r / s.keys, r % s.keys, h);
#pragma omp parallel for if (team)
        for (std::int64_t h = 0; h < s.hidden; ++h)
            dw[h] += attention_math::additive_v_grad(q, k, ds, s, h);
    }

private:
    static attention_math::Sizes sizes(const AdditiveScoreShape& s) {
        return {s.batch, s.queries, s.keys, s.hidden};
    }
};

}  // namespace

std::unique_ptr<AttentionKernel> make_attention_cpu(Device&, const AttentionConfig&) {
    return std::make_unique<AttentionCpu>();
}

}  // namespace tandem::cpu

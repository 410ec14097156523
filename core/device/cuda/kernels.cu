// The CUDA backend's own kernels (see kernels.cuh), launched as launch.cuh says.

#include "base/rng.h"
#include "device/cuda/block_sum.cuh"
#include "device/cuda/kernels.cuh"
#include "device/cuda/launch.cuh"

namespace tandem::cuda::kernels {
namespace {

static_assert(kThreads <= kBlockSumThreads);

__global__ void add_kernel(const float* a, const float* b, float* z, std::int64_t n) {
    TANDEM_GRID_STRIDE(i, n) z[i] = a[i] + b[i];
}

__global__ void add_relu_kernel(const float* a, const float* b, float* z, std::int64_t n) {
    TANDEM_GRID_STRIDE(i, n) z[i] = fmaxf(a[i] + b[i], 0.f);
}

__global__ void multiply_kernel(const float* a, const float* b, float* z, std::int64_t n) {
    TANDEM_GRID_STRIDE(i, n) z[i] = a[i] * b[i];
}

__global__ void accumulate_kernel(float* z, const float* x, std::int64_t n) {
    TANDEM_GRID_STRIDE(i, n) z[i] += x[i];
}

__global__ void fill_kernel(float* z, float v, std::int64_t n) {
    TANDEM_GRID_STRIDE(i, n) z[i] = v;
}

__global__ void scale_kernel(float* z, float f, std::int64_t n) {
    TANDEM_GRID_STRIDE(i, n) z[i] *= f;
}

__global__ void blend_kernel(float* z, float keep, const float* x, float take, std::int64_t n) {
    TANDEM_GRID_STRIDE(i, n) z[i] = keep * z[i] + take * x[i];
}

__global__ void sgd_kernel(float* w, const float* g, float* buf, std::int64_t n, float lr,
                           float momentum, float dampening, float wd, bool nesterov, bool first) {
    TANDEM_GRID_STRIDE(i, n) {
        // Same operation order as the CPU loop (tensor_ops_cpu.cpp), so results agree to
        // rounding (FMA contraction aside).
        float d = g[i] + wd * w[i];
        if (buf) {
            buf[i] = first ? d : momentum * buf[i] + (1.0f - dampening) * d;
            d = nesterov ? d + momentum * buf[i] : buf[i];
        }
        w[i] -= lr * d;
    }
}

__global__ void adam_kernel(float* w, const float* g, float* m, float* v, std::int64_t n,
                            float shrink, float l2, float beta1, float beta2, float eps,
                            float step_size, float bias_correction2_sqrt) {
    TANDEM_GRID_STRIDE(i, n) {
        // Same operation order as the CPU loop (tensor_ops_cpu.cpp).
        const float wi = w[i] * shrink;
        const float gi = g[i] + l2 * wi;
        m[i] = m[i] * beta1 + (1.0f - beta1) * gi;
        v[i] = v[i] * beta2 + (1.0f - beta2) * gi * gi;
        const float denom = sqrtf(v[i]) / bias_correction2_sqrt + eps;
        w[i] = wi - step_size * m[i] / denom;
    }
}

__global__ void element_loss_forward_kernel(const float* y, const float* t, double* loss,
                                            int* correct, std::int64_t n, std::int64_t elements,
                                            bool bce) {
    TANDEM_GRID_STRIDE(i, n) {
        double sum = 0;
        bool right = true;
        for (std::int64_t j = i * elements; j < (i + 1) * elements; ++j) {
            const double yj = y[j], tj = t[j];
            sum += bce ? fmax(yj, 0.0) - yj * tj + log1p(exp(-fabs(yj))) : (yj - tj) * (yj - tj);
            right = right && (y[j] > 0) == (t[j] > 0.5f);
        }
        loss[i] = sum / double(elements);
        correct[i] = right ? 1 : 0;
    }
}

__global__ void element_loss_backward_kernel(const float* y, const float* t, float* d,
                                             std::int64_t total, float factor, bool bce) {
    TANDEM_GRID_STRIDE(j, total) {
        d[j] = factor * (bce ? 1.f / (1.f + expf(-y[j])) - t[j] : 2.f * (y[j] - t[j]));
    }
}

__global__ void sum_squares_kernel(const float* x, std::int64_t n, double* partials) {
    double v = 0;
    TANDEM_GRID_STRIDE(i, n) v += double(x[i]) * double(x[i]);
    const double total = block_sum(v);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void embedding_forward_kernel(const float* ids, const float* table, float* dst,
                                         std::int64_t count, std::int64_t rows, std::int64_t dim,
                                         unsigned long long* bad) {
    TANDEM_GRID_STRIDE(e, count * dim) {
        const std::int64_t i = e / dim;
        const float id = ids[i];
        if (id >= 0 && id < static_cast<float>(rows) && floorf(id) == id) {
            dst[e] = table[static_cast<std::int64_t>(id) * dim + e % dim];
        } else {
            dst[e] = 0;
            atomicMin(bad, static_cast<unsigned long long>(i + 1));
        }
    }
}

__global__ void embedding_backward_kernel(const float* ids, const float* dy, float* table,
                                          std::int64_t count, std::int64_t rows, std::int64_t dim) {
    TANDEM_GRID_STRIDE(e, count * dim) {
        const float id = ids[e / dim];
        if (id >= 0 && id < static_cast<float>(rows) && floorf(id) == id)
            atomicAdd(table + static_cast<std::int64_t>(id) * dim + e % dim, dy[e]);
    }
}

__global__ void softmax_forward_kernel(const float* x, float* y, std::int64_t outer,
                                       std::int64_t size, std::int64_t inner, bool log) {
    TANDEM_GRID_STRIDE(r, outer * inner) {
        const std::int64_t at = (r / inner) * size * inner + r % inner;
        row_math::softmax_forward(x + at, y + at, size, inner, log);
    }
}

__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx,
                                        std::int64_t outer, std::int64_t size, std::int64_t inner,
                                        bool log) {
    TANDEM_GRID_STRIDE(r, outer * inner) {
        const std::int64_t at = (r / inner) * size * inner + r % inner;
        row_math::softmax_backward(y + at, dy + at, dx + at, size, inner, log);
    }
}

__global__ void layer_norm_forward_kernel(const float* x, float* y, const float* gamma,
                                          const float* beta, std::int64_t rows, std::int64_t cols,
                                          float eps, float* mean, float* rstd) {
    TANDEM_GRID_STRIDE(r, rows) {
        row_math::layer_norm_forward(x + r * cols, y + r * cols, gamma, beta, cols, eps, mean + r,
                                     rstd + r);
    }
}

__global__ void layer_norm_backward_kernel(const float* x, const float* dy, const float* gamma,
                                           const float* mean, const float* rstd, std::int64_t rows,
                                           std::int64_t cols, float* dx) {
    TANDEM_GRID_STRIDE(r, rows) {
        row_math::layer_norm_backward(x + r * cols, dy + r * cols, gamma, cols, mean[r], rstd[r],
                                      dx + r * cols);
    }
}

__global__ void layer_norm_parameter_kernel(const float* x, const float* dy, const float* mean,
                                            const float* rstd, std::int64_t rows, std::int64_t cols,
                                            float* dgamma, float* dbeta) {
    TANDEM_GRID_STRIDE(c, cols) {
        row_math::layer_norm_parameter_grads(x, dy, mean, rstd, rows, cols, c, dgamma, dbeta);
    }
}

__global__ void rnn_cell_forward_kernel(bool lstm, std::int64_t n, std::int64_t hidden,
                                        const float* gx, const float* gh, const float* h_prev,
                                        const float* c_prev, float* h, float* c, float* saved) {
    TANDEM_GRID_STRIDE(i, n * hidden) {
        const std::int64_t b = i / hidden, j = i % hidden;
        if (lstm)
            rnn_cell::lstm_forward(b, j, hidden, gx, gh, c_prev, h, c, saved);
        else
            rnn_cell::gru_forward(b, j, hidden, gx, gh, h_prev, h, saved);
    }
}

__global__ void rnn_cell_backward_kernel(bool lstm, std::int64_t n, std::int64_t hidden,
                                         const float* saved, const float* h_prev,
                                         const float* c_prev, const float* c, const float* dh,
                                         const float* dc, float* dgx, float* dgh, float* dh_prev,
                                         float* dc_prev) {
    TANDEM_GRID_STRIDE(i, n * hidden) {
        const std::int64_t b = i / hidden, j = i % hidden;
        if (lstm)
            rnn_cell::lstm_backward(b, j, hidden, saved, c_prev, c, dh, dc, dgx, dgh, dh_prev,
                                    dc_prev);
        else
            rnn_cell::gru_backward(b, j, hidden, saved, h_prev, dh, dgx, dgh, dh_prev);
    }
}

__global__ void activation_forward_kernel(ActivationAlgorithm a, float alpha, const float* x,
                                          float* y, std::int64_t n) {
    TANDEM_GRID_STRIDE(i, n) y[i] = activation_forward(a, alpha, x[i]);
}

__global__ void activation_backward_kernel(ActivationAlgorithm a, float alpha, const float* s,
                                           const float* dy, float* dx, std::int64_t n) {
    TANDEM_GRID_STRIDE(i, n) dx[i] = activation_backward(a, alpha, s[i], dy[i]);
}

__global__ void dropout_forward_kernel(const float* x, float* y, unsigned char* m, std::int64_t n,
                                       float p, std::uint64_t key, std::uint64_t first, bool nhwc,
                                       std::int64_t c_dim, std::int64_t h_dim, std::int64_t w_dim) {
    const float keep_scale = 1.f / (1.f - p);
    TANDEM_GRID_STRIDE(i, n) {
        std::int64_t logical = i;
        if (nhwc) {  // storage N x H x W x C -> logical ((n*C + c)*H + h)*W + w
            const std::int64_t c = i % c_dim;
            std::int64_t rest = i / c_dim;
            const std::int64_t w = rest % w_dim;
            rest /= w_dim;
            const std::int64_t h = rest % h_dim;
            const std::int64_t b = rest / h_dim;
            logical = ((b * c_dim + c) * h_dim + h) * w_dim + w;
        }
        const bool kept = rng_uniform(key, first + static_cast<std::uint64_t>(logical)) >= p;
        m[i] = kept;
        y[i] = kept ? x[i] * keep_scale : 0.f;
    }
}

__global__ void dropout_backward_kernel(const float* dy, const unsigned char* m, float* dx,
                                        std::int64_t n, float p) {
    const float keep_scale = 1.f / (1.f - p);
    TANDEM_GRID_STRIDE(i, n) dx[i] = m[i] ? dy[i] * keep_scale : 0.f;
}

__global__ void cross_entropy_forward_kernel(const float* x, const float* log_p, const int* y,
                                             float* prob, double* loss, int* correct,
                                             int* bad_label, std::int64_t n, std::int64_t k,
                                             float smoothing) {
    const double on_label = 1.0 - smoothing, per_class = double(smoothing) / double(k);
    TANDEM_GRID_STRIDE(i, n) {
        const float* row = x + i * k;
        const float* lp = log_p + i * k;
        float* p = prob + i * k;
        std::int64_t arg_max = 0;  // the first maximum wins ties, as on the CPU
        double sum_log_p = 0;
        for (std::int64_t j = 0; j < k; ++j) {
            if (row[j] > row[arg_max]) arg_max = j;
            p[j] = expf(lp[j]);
            sum_log_p += lp[j];
        }
        const int label = y[i];
        if (label < 0 || label >= k) {
            atomicMin(bad_label, static_cast<int>(i));
            loss[i] = 0;
            correct[i] = 0;
            continue;
        }
        loss[i] = -(on_label * double(lp[label]) + per_class * sum_log_p);
        correct[i] = arg_max == label;
    }
}

__global__ void cross_entropy_backward_kernel(const float* prob, const int* y, float* dx,
                                              std::int64_t n, std::int64_t k, float smoothing,
                                              float scale) {
    const float on_label = 1.f - smoothing, per_class = smoothing / static_cast<float>(k);
    TANDEM_GRID_STRIDE(e, n * k) {
        const std::int64_t i = e / k, j = e % k;
        const float target = per_class + (j == y[i] ? on_label : 0.f);
        dx[e] = scale * (prob[e] - target);
    }
}

__global__ void add_bias_rows_kernel(float* y, const float* b, std::int64_t n, std::int64_t f) {
    TANDEM_GRID_STRIDE(e, n * f) y[e] += b[e % f];
}

__global__ void inverse_std_kernel(const float* var, float eps, float* inv, std::int64_t c) {
    TANDEM_GRID_STRIDE(i, c) inv[i] = rsqrtf(var[i] + eps);
}

__global__ void bn_constant_stats_backward_kernel(const float* x, const float* dy,
                                                  const float* gamma, const float* mean,
                                                  const float* var, float eps, float* dx,
                                                  float* dgamma, float* dbeta, std::int64_t n,
                                                  std::int64_t c, std::int64_t spatial) {
    const std::int64_t ch = blockIdx.x;
    const float inv = rsqrtf(var[ch] + eps), mu = mean[ch], g = gamma[ch];
    double sum_dy = 0, sum_dy_xhat = 0;
    for (std::int64_t e = threadIdx.x; e < n * spatial; e += blockDim.x) {
        const std::int64_t at = ((e / spatial) * c + ch) * spatial + e % spatial;
        const float d = dy[at];
        sum_dy += d;
        sum_dy_xhat += double(d) * double((x[at] - mu) * inv);
        dx[at] = d * g * inv;
    }
    sum_dy = block_sum(sum_dy);
    sum_dy_xhat = block_sum(sum_dy_xhat);
    if (threadIdx.x == 0) {
        dgamma[ch] += float(sum_dy_xhat);
        dbeta[ch] += float(sum_dy);
    }
}

}  // namespace

void embedding_forward(const float* ids, const float* table, float* dst, std::int64_t count,
                       std::int64_t rows, std::int64_t dim, unsigned long long* bad,
                       cudaStream_t stream) {
    embedding_forward_kernel<<<blocks_for(count * dim), kThreads, 0, stream>>>(
        ids, table, dst, count, rows, dim, bad);
}

void embedding_backward(const float* ids, const float* dy, float* table, std::int64_t count,
                        std::int64_t rows, std::int64_t dim, cudaStream_t stream) {
    embedding_backward_kernel<<<blocks_for(count * dim), kThreads, 0, stream>>>(ids, dy, table,
                                                                                count, rows, dim);
}

void softmax_forward(const float* x, float* y, std::int64_t outer, std::int64_t size,
                     std::int64_t inner, bool log, cudaStream_t stream) {
    softmax_forward_kernel<<<blocks_for(outer * inner), kThreads, 0, stream>>>(x, y, outer, size,
                                                                               inner, log);
}

void softmax_backward(const float* y, const float* dy, float* dx, std::int64_t outer,
                      std::int64_t size, std::int64_t inner, bool log, cudaStream_t stream) {
    softmax_backward_kernel<<<blocks_for(outer * inner), kThreads, 0, stream>>>(y, dy, dx, outer,
                                                                                size, inner, log);
}

void layer_norm_forward(const float* x, float* y, const float* gamma, const float* beta,
                        std::int64_t rows, std::int64_t cols, float eps, float* mean, float* rstd,
                        cudaStream_t stream) {
    layer_norm_forward_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(x, y, gamma, beta, rows,
                                                                         cols, eps, mean, rstd);
}

void layer_norm_backward(const float* x, const float* dy, const float* gamma, const float* mean,
                         const float* rstd, std::int64_t rows, std::int64_t cols, float* dx,
                         float* dgamma, float* dbeta, cudaStream_t stream) {
    layer_norm_backward_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(x, dy, gamma, mean, rstd,
                                                                          rows, cols, dx);
    if (dgamma != nullptr)
        layer_norm_parameter_kernel<<<blocks_for(cols), kThreads, 0, stream>>>(
            x, dy, mean, rstd, rows, cols, dgamma, dbeta);
}

void rnn_cell_forward(bool lstm, std::int64_t n, std::int64_t hidden, const float* gx,
                      const float* gh, const float* h_prev, const float* c_prev, float* h, float* c,
                      float* saved, cudaStream_t stream) {
    rnn_cell_forward_kernel<<<blocks_for(n * hidden), kThreads, 0, stream>>>(
        lstm, n, hidden, gx, gh, h_prev, c_prev, h, c, saved);
}

void rnn_cell_backward(bool lstm, std::int64_t n, std::int64_t hidden, const float* saved,
                       const float* h_prev, const float* c_prev, const float* c, const float* dh,
                       const float* dc, float* dgx, float* dgh, float* dh_prev, float* dc_prev,
                       cudaStream_t stream) {
    rnn_cell_backward_kernel<<<blocks_for(n * hidden), kThreads, 0, stream>>>(
        lstm, n, hidden, saved, h_prev, c_prev, c, dh, dc, dgx, dgh, dh_prev, dc_prev);
}

void add(const float* a, const float* b, float* dst, std::int64_t n, cudaStream_t stream) {
    add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a, b, dst, n);
}

void add_relu(const float* a, const float* b, float* dst, std::int64_t n, cudaStream_t stream) {
    add_relu_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a, b, dst, n);
}

void multiply(const float* a, const float* b, float* dst, std::int64_t n, cudaStream_t stream) {
    multiply_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a, b, dst, n);
}

void accumulate(float* dst, const float* src, std::int64_t n, cudaStream_t stream) {
    accumulate_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, src, n);
}

void fill(float* dst, float value, std::int64_t n, cudaStream_t stream) {
    fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, value, n);
}

void scale(float* dst, float factor, std::int64_t n, cudaStream_t stream) {
    scale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, factor, n);
}

void blend(float* dst, float keep, const float* src, float take, std::int64_t n,
           cudaStream_t stream) {
    blend_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, keep, src, take, n);
}

void sgd_update(float* weights, const float* grad, float* momentum_buffer, std::int64_t n, float lr,
                float momentum, float dampening, float weight_decay, bool nesterov, bool first_step,
                cudaStream_t stream) {
    sgd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(weights, grad, momentum_buffer, n, lr,
                                                       momentum, dampening, weight_decay, nesterov,
                                                       first_step);
}

void adam_update(float* weights, const float* grad, float* exp_avg, float* exp_avg_sq,
                 std::int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                 bool decoupled, float step_size, float bias_correction2_sqrt,
                 cudaStream_t stream) {
    const float shrink = decoupled ? 1.0f - lr * weight_decay : 1.0f;
    const float l2 = decoupled ? 0.0f : weight_decay;
    adam_kernel<<<blocks_for(n), kThreads, 0, stream>>>(weights, grad, exp_avg, exp_avg_sq, n,
                                                        shrink, l2, beta1, beta2, eps, step_size,
                                                        bias_correction2_sqrt);
}

void element_loss_forward(const float* output, const float* targets, double* loss, int* correct,
                          std::int64_t n, std::int64_t elements, bool bce, cudaStream_t stream) {
    element_loss_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(output, targets, loss,
                                                                        correct, n, elements, bce);
}

void element_loss_backward(const float* output, const float* targets, float* diff, std::int64_t n,
                           std::int64_t elements, bool bce, float scale, cudaStream_t stream) {
    const std::int64_t total = n * elements;
    element_loss_backward_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        output, targets, diff, total, scale / static_cast<float>(elements), bce);
}

void sum_squares(const float* src, std::int64_t n, double* partials, cudaStream_t stream) {
    sum_squares_kernel<<<kSumBlocks, kThreads, 0, stream>>>(src, n, partials);
}

void activation_forward(ActivationAlgorithm algorithm, float alpha, const float* src, float* dst,
                        std::int64_t n, cudaStream_t stream) {
    activation_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(algorithm, alpha, src, dst,
                                                                      n);
}

void activation_backward(ActivationAlgorithm algorithm, float alpha, const float* saved,
                         const float* diff_dst, float* diff_src, std::int64_t n,
                         cudaStream_t stream) {
    activation_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(algorithm, alpha, saved,
                                                                       diff_dst, diff_src, n);
}

void dropout_forward(const float* src, float* dst, unsigned char* mask, std::int64_t n, float p,
                     std::uint64_t key, std::uint64_t first, bool nhwc, std::int64_t channels,
                     std::int64_t height, std::int64_t width, cudaStream_t stream) {
    dropout_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dst, mask, n, p, key, first,
                                                                   nhwc, channels, height, width);
}

void dropout_backward(const float* diff_dst, const unsigned char* mask, float* diff_src,
                      std::int64_t n, float p, cudaStream_t stream) {
    dropout_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(diff_dst, mask, diff_src, n, p);
}

void cross_entropy_forward(const float* logits, const float* log_p, const int* labels,
                           float* probabilities, double* loss, int* correct, int* bad_label,
                           std::int64_t n, std::int64_t classes, float smoothing,
                           cudaStream_t stream) {
    cross_entropy_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
        logits, log_p, labels, probabilities, loss, correct, bad_label, n, classes, smoothing);
}

void cross_entropy_backward(const float* probabilities, const int* labels, float* diff_logits,
                            std::int64_t n, std::int64_t classes, float smoothing, float scale,
                            cudaStream_t stream) {
    cross_entropy_backward_kernel<<<blocks_for(n * classes), kThreads, 0, stream>>>(
        probabilities, labels, diff_logits, n, classes, smoothing, scale);
}

void add_bias_rows(float* dst, const float* bias, std::int64_t n, std::int64_t features,
                   cudaStream_t stream) {
    add_bias_rows_kernel<<<blocks_for(n * features), kThreads, 0, stream>>>(dst, bias, n, features);
}

void inverse_std(const float* variance, float epsilon, float* inv_std, std::int64_t channels,
                 cudaStream_t stream) {
    inverse_std_kernel<<<blocks_for(channels), kThreads, 0, stream>>>(variance, epsilon, inv_std,
                                                                      channels);
}

void batch_norm_backward_constant_stats(const float* src, const float* diff_dst, const float* gamma,
                                        const float* mean, const float* variance, float epsilon,
                                        float* diff_src, float* diff_gamma, float* diff_beta,
                                        std::int64_t n, std::int64_t channels, std::int64_t spatial,
                                        cudaStream_t stream) {
    bn_constant_stats_backward_kernel<<<static_cast<unsigned>(channels), kThreads, 0, stream>>>(
        src, diff_dst, gamma, mean, variance, epsilon, diff_src, diff_gamma, diff_beta, n, channels,
        spatial);
}

}  // namespace tandem::cuda::kernels

// The CUDA backend's own kernels, where no cuDNN or cuBLAS call fits. Raw pointers, sizes and
// a stream only (STYLE: .cu files see no Tensor, Device or exception), all launched
// asynchronously on `stream`; the caller checks cudaGetLastError after each launch.
// Layout: `nhwc` selects channels_last storage (N x H x W x C) for 4-D tensors.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device/activation_math.h"
#include "device/cuda/lrn_pixel.h"
#include "device/rnn_cell_math.h"
#include "device/row_math.h"

namespace tandem::cuda::kernels {

// Element-wise, over n floats in storage order.
void add(const float* a, const float* b, float* dst, std::int64_t n, cudaStream_t stream);
void add_relu(const float* a, const float* b, float* dst, std::int64_t n, cudaStream_t stream);
void multiply(const float* a, const float* b, float* dst, std::int64_t n, cudaStream_t stream);
void accumulate(float* dst, const float* src, std::int64_t n, cudaStream_t stream);
void fill(float* dst, float value, std::int64_t n, cudaStream_t stream);
void scale(float* dst, float factor, std::int64_t n, cudaStream_t stream);
// dst *= factor, and *nonfinite = 1 where a result is inf or NaN (loss scaling's unscale;
// loss_scale.cu). *nonfinite is only ever set, never cleared.
void unscale(float* dst, float factor, std::int64_t n, int* nonfinite, cudaStream_t stream);
// dst = keep * dst + take * src.
void blend(float* dst, float keep, const float* src, float take, std::int64_t n,
           cudaStream_t stream);
// PyTorch's SGD (see TensorOpsKernel::sgd_update); momentum_buffer is null without momentum.
void sgd_update(float* weights, const float* grad, float* momentum_buffer, std::int64_t n, float lr,
                float momentum, float dampening, float weight_decay, bool nesterov, bool first_step,
                cudaStream_t stream);
// PyTorch's Adam and AdamW (see TensorOpsKernel::adam_update), moments updated in place.
void adam_update(float* weights, const float* grad, float* exp_avg, float* exp_avg_sq,
                 std::int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                 bool decoupled, float step_size, float bias_correction2_sqrt, cudaStream_t stream);
// Per-block partial sums of squares in double: `blocks` values into partials (device).
constexpr int kSumBlocks = 256;
void sum_squares(const float* src, std::int64_t n, double* partials, cudaStream_t stream);

// Softmax (log_softmax) along rows of `size` elements `inner` apart (outer * inner rows), and
// layer norm over `rows` rows of `cols` (gamma, beta null without affine; backward adds into
// dgamma, dbeta when given): row_math.h's definitions, one thread per row.
void softmax_forward(const float* x, float* y, std::int64_t outer, std::int64_t size,
                     std::int64_t inner, bool log, cudaStream_t stream);
void softmax_backward(const float* y, const float* dy, float* dx, std::int64_t outer,
                      std::int64_t size, std::int64_t inner, bool log, cudaStream_t stream);
void layer_norm_forward(const float* x, float* y, const float* gamma, const float* beta,
                        std::int64_t rows, std::int64_t cols, float eps, float* mean, float* rstd,
                        cudaStream_t stream);
void layer_norm_backward(const float* x, const float* dy, const float* gamma, const float* mean,
                         const float* rstd, std::int64_t rows, std::int64_t cols, float* dx,
                         float* dgamma, float* dbeta, cudaStream_t stream);

// Embedding rows: dst[i] = table[ids[i]]; an index that is not a whole number in [0, rows)
// sets *bad to its position + 1 (the smallest such) and writes zeros. Backward adds rows with
// atomicAdd (in no fixed order).
void embedding_forward(const float* ids, const float* table, float* dst, std::int64_t count,
                       std::int64_t rows, std::int64_t dim, unsigned long long* bad,
                       cudaStream_t stream);
void embedding_backward(const float* ids, const float* dy, float* table, std::int64_t count,
                        std::int64_t rows, std::int64_t dim, cudaStream_t stream);
// The same sums without atomics, each table element's in the samples' order (the CPU's):
// deterministic (embedding.cu says how).
void embedding_backward_ordered(const float* ids, const float* dy, float* table, std::int64_t count,
                                std::int64_t rows, std::int64_t dim, cudaStream_t stream);

// One LSTM (lstm true) or GRU cell step over n samples x hidden units, rnn_cell_math.h's
// definitions; c_prev, c, dc and dc_prev are null for the GRU.
void rnn_cell_forward(bool lstm, std::int64_t n, std::int64_t hidden, const float* gx,
                      const float* gh, const float* h_prev, const float* c_prev, float* h, float* c,
                      float* saved, cudaStream_t stream);
void rnn_cell_backward(bool lstm, std::int64_t n, std::int64_t hidden, const float* saved,
                       const float* h_prev, const float* c_prev, const float* c, const float* dh,
                       const float* dc, float* dgx, float* dgh, float* dh_prev, float* dc_prev,
                       cudaStream_t stream);

// Element-wise activations with activation_math.h's definitions: dst = f(src), and
// diff_src = f'(...) diff_dst from `saved` (dst or src, as activation_backward_uses_dst says).
void activation_forward(ActivationAlgorithm algorithm, float alpha, const float* src, float* dst,
                        std::int64_t n, cudaStream_t stream);
void activation_backward(ActivationAlgorithm algorithm, float alpha, const float* saved,
                         const float* diff_dst, float* diff_src, std::int64_t n,
                         cudaStream_t stream);

// Dropout with the CPU's mask: element with logical (NCHW) index i is kept when
// rng_uniform(key, first + i) >= p. For nhwc the logical index is rebuilt from c, h, w.
void dropout_forward(const float* src, float* dst, unsigned char* mask, std::int64_t n, float p,
                     std::uint64_t key, std::uint64_t first, bool nhwc, std::int64_t channels,
                     std::int64_t height, std::int64_t width, cudaStream_t stream);
void dropout_backward(const float* diff_dst, const unsigned char* mask, float* diff_src,
                      std::int64_t n, float p, cudaStream_t stream);

// Cross-entropy from log-probabilities (cuDNN's log softmax), one thread per sample: writes
// probabilities, each sample's loss (double) and whether its first arg-max logit is the label,
// and the lowest sample index with a label outside [0, classes) into *bad_label (which the
// caller sets to n beforehand).
void cross_entropy_forward(const float* logits, const float* log_p, const int* labels,
                           float* probabilities, double* loss, int* correct, int* bad_label,
                           std::int64_t n, std::int64_t classes, float smoothing,
                           cudaStream_t stream);
// diff_logits = scale * (probabilities - target); an out-of-range label counts as no class.
void cross_entropy_backward(const float* probabilities, const int* labels, float* diff_logits,
                            std::int64_t n, std::int64_t classes, float smoothing, float scale,
                            cudaStream_t stream);

// MSE (bce = false) or BCEWithLogits over n samples of `elements` each (ElementLossKernel),
// one thread per sample: each sample's mean loss (double) and whether every element is on
// its target's side.
void element_loss_forward(const float* output, const float* targets, double* loss, int* correct,
                          std::int64_t n, std::int64_t elements, bool bce, cudaStream_t stream);
// diff = scale / elements * (MSE 2 (y - t) | BCEWithLogits sigmoid(y) - t), over n * elements.
void element_loss_backward(const float* output, const float* targets, float* diff, std::int64_t n,
                           std::int64_t elements, bool bce, float scale, cudaStream_t stream);

// The 16-bit operands of mixed precision (device/precision.h), converted element by element
// over n values in storage order (half_convert.cu): IEEE half (fp16) or bfloat16 (bf16), held as
// 16-bit words. Narrowing rounds to nearest, ties to even, as round_to_fp16 and round_to_bf16
// do; widening is exact.
enum class HalfFormat { fp16, bf16 };
// halves = src rounded.
void narrow(HalfFormat format, const float* src, std::uint16_t* halves, std::int64_t n,
            cudaStream_t stream);
// dst = halves as floats.
void widen(HalfFormat format, const std::uint16_t* halves, float* dst, std::int64_t n,
           cudaStream_t stream);
// dst += halves as floats.
void add_widened(HalfFormat format, const std::uint16_t* halves, float* dst, std::int64_t n,
                 cudaStream_t stream);

// dst (n x features, row-major) += bias broadcast over rows.
void add_bias_rows(float* dst, const float* bias, std::int64_t n, std::int64_t features,
                   cudaStream_t stream);

// inv_std[c] = 1 / sqrt(variance[c] + epsilon).
void inverse_std(const float* variance, float epsilon, float* inv_std, std::int64_t channels,
                 cudaStream_t stream);
// Batch norm backward with the statistics as constants (evaluation mode), nchw tensors (nhwc
// ones have batch_norm_nhwc.cuh), one block per channel:
//   diff_src = diff_dst * gamma * inv_std;  diff_gamma += sum diff_dst * (x - mean) * inv_std;
//   diff_beta += sum diff_dst.
void batch_norm_backward_constant_stats(const float* src, const float* diff_dst, const float* gamma,
                                        const float* mean, const float* variance, float epsilon,
                                        float* diff_src, float* diff_gamma, float* diff_beta,
                                        std::int64_t n, std::int64_t channels, std::int64_t spatial,
                                        cudaStream_t stream);

// Pooling with the reference kernel's rules (core/device/cpu/reference/pool2d_reference.cpp):
// windows clipped to the input, PyTorch's divisors, max ties to the first in row-major window
// order, and argmax as int32 h * W + w per output element in the output's storage order.
struct PoolShape {
    std::int64_t n, c, h, w, out_h, out_w;
    std::int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
    bool max, count_include_pad, nhwc;
};
// argmax may be null (max pooling in evaluation).
void pool_forward(const PoolShape& s, const float* src, float* dst, std::int32_t* argmax,
                  cudaStream_t stream);
// Gathers into every input element from the outputs whose window holds it (no atomics, so
// the result is deterministic). argmax is required for max pooling.
void pool_backward(const PoolShape& s, const float* diff_dst, const std::int32_t* argmax,
                   float* diff_src, cudaStream_t stream);

// LRN across channels, one thread per pixel (lrn_pixel.h has the math): for the windows cuDNN
// cannot do. Training forward writes each element's scale s into `scale` (as many floats as
// the tensor; null in evaluation), which backward reads.
void lrn_forward(const lrn::Shape& s, const float* src, float* dst, float* scale,
                 cudaStream_t stream);
void lrn_backward(const lrn::Shape& s, const float* src, const float* diff_dst, const float* scale,
                  float* diff_src, cudaStream_t stream);

}  // namespace tandem::cuda::kernels

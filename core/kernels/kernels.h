// One abstract kernel per layer kind: the device-specific half of each layer.
//
// A layer builds its kernel through KernelRegistry::make<K>(device, config) when it first sees
// an input shape (see KernelCache) and calls it with src/dst tensors. A kernel object holds
// its heavy state (oneDNN primitives, cuDNN descriptors, algorithm choice) and never any
// per-micro-batch data; workspaces it needs between forward and backward are u8 tensors the
// layer allocates (workspace_bytes()) and keeps in the pass's tape.
//
// Conventions for every kernel:
//  - src/dst/diff_src/diff_dst name tensors at this level (oneDNN's naming).
//  - 4-D tensors may be contiguous (NCHW) or channels_last (NHWC); Config::layout says which,
//    and dst tensors are given in the same layout as src.
//  - backward_weights / diff_weights / diff_bias / diff_gamma / diff_beta ADD into their
//    destination; every other dst is overwritten.
#pragma once

#include <compare>
#include <cstdint>
#include <vector>

#include "device/activation_math.h"
#include "device/precision.h"
#include "tensor/tensor.h"

namespace tandem {

struct Conv2dConfig {
    std::int64_t n, c, h, w;  // input
    std::int64_t out_channels;
    std::int64_t kernel_h, kernel_w;
    std::int64_t stride_h, stride_w;
    std::int64_t pad_h, pad_w;
    std::int64_t groups;
    bool bias;
    Layout layout;
    Precision precision = Precision::fp32;  // device/precision.h
    auto operator<=>(const Conv2dConfig&) const = default;
    std::int64_t out_h() const { return (h + 2 * pad_h - kernel_h) / stride_h + 1; }
    std::int64_t out_w() const { return (w + 2 * pad_w - kernel_w) / stride_w + 1; }
};

// The kernels of a layer that multiplies its input by weights (Conv2d, Linear): the product,
// and the gradients of the input and of the weights.
struct WeightedKernel {
    virtual ~WeightedKernel() = default;
    // bias is undefined when the config's bias is false.
    virtual void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                         Tensor& dst) = 0;
    virtual void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) = 0;
    // Adds into diff_weights and (when defined) diff_bias.
    virtual void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                                  Tensor& diff_bias) = 0;
    // Both gradients of one diff_dst: backward_weights, then backward_data. A kernel that
    // converts diff_dst for its products overrides it to convert once.
    virtual void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& weights,
                          Tensor& diff_src, Tensor& diff_weights, Tensor& diff_bias) {
        backward_weights(src, diff_dst, diff_weights, diff_bias);
        backward_data(diff_dst, weights, diff_src);
    }
};

// weights: out_channels x (c / groups) x kernel_h x kernel_w, contiguous. bias: out_channels.
struct Conv2dKernel : WeightedKernel {
    static constexpr const char* kName = "Conv2d";
    using Config = Conv2dConfig;
};

struct BatchNormConfig {
    std::int64_t n, c, h, w;
    float epsilon;
    bool training;  // batch statistics (training) or given running statistics (evaluation)
    Layout layout;
    auto operator<=>(const BatchNormConfig&) const = default;
};

// gamma, beta, mean, variance: c floats. Variance is the biased (1/n) batch variance.
struct BatchNormKernel {
    static constexpr const char* kName = "BatchNorm2d";
    using Config = BatchNormConfig;
    virtual ~BatchNormKernel() = default;
    // training: writes the batch mean and variance into mean/variance, then normalises;
    // evaluation: normalises with the given mean/variance.
    virtual void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& mean,
                         Tensor& variance, Tensor& dst) = 0;
    // Adds into diff_gamma and diff_beta. In evaluation mode the statistics are constants.
    virtual void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                          const Tensor& mean, const Tensor& variance, Tensor& diff_src,
                          Tensor& diff_gamma, Tensor& diff_beta) = 0;
};

// Batch normalisation in training with the ReLU that follows it, in one pass over memory each
// way (a container runs it for a BatchNorm2d followed by a ReLU: Layer::takes_relu). Forward
// writes max(0, normalised) and a mask of where it passed (workspace_bytes()); backward takes
// the gradient of the ReLU's output and that mask. Device kinds without one run the two layers.
struct BatchNormReluKernel {
    static constexpr const char* kName = "BatchNorm2d+ReLU";
    using Config = BatchNormConfig;  // training only
    virtual ~BatchNormReluKernel() = default;
    virtual std::size_t workspace_bytes() const = 0;
    virtual void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& mean,
                         Tensor& variance, Tensor& dst, Tensor& workspace) = 0;
    // Adds into diff_gamma and diff_beta.
    virtual void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                          const Tensor& mean, const Tensor& variance, const Tensor& workspace,
                          Tensor& diff_src, Tensor& diff_gamma, Tensor& diff_beta) = 0;
};

struct ActivationConfig {
    Shape shape;  // any rank: element-wise, so only the storage order (layout) matters
    Layout layout;
    ActivationAlgorithm algorithm;
    float alpha;  // leaky_relu's negative slope; 0 for the others
    auto operator<=>(const ActivationConfig&) const = default;
};

// The element-wise activations (device/activation_math.h defines each).
struct ActivationKernel {
    static constexpr const char* kName = "Activation";
    using Config = ActivationConfig;
    virtual ~ActivationKernel() = default;
    virtual void forward(const Tensor& src, Tensor& dst) = 0;
    // `saved` is forward's dst where activation_backward_uses_dst(algorithm), its src otherwise.
    virtual void backward(const Tensor& saved, const Tensor& diff_dst, Tensor& diff_src) = 0;
};

enum class PoolKind { max, average };

struct Pool2dConfig {
    PoolKind kind;
    std::int64_t n, c, h, w;
    std::int64_t kernel_h, kernel_w;
    std::int64_t stride_h, stride_w;
    std::int64_t pad_h, pad_w;
    bool ceil_mode;          // output size rounds up (Caffe) instead of down (PyTorch)
    bool count_include_pad;  // average: divide by the full window, padding included
    Layout layout;
    auto operator<=>(const Pool2dConfig&) const = default;
    std::int64_t out_h() const;
    std::int64_t out_w() const;
};

struct Pool2dKernel {
    static constexpr const char* kName = "Pool2d";
    using Config = Pool2dConfig;
    virtual ~Pool2dKernel() = default;
    // Bytes of workspace forward fills for backward in training (argmax indices); may be 0.
    virtual std::size_t workspace_bytes() const = 0;
    // workspace is undefined in evaluation (inference) mode.
    virtual void forward(const Tensor& src, Tensor& dst, Tensor& workspace) = 0;
    virtual void backward(const Tensor& diff_dst, const Tensor& workspace, Tensor& diff_src) = 0;
};

struct LrnConfig {
    std::int64_t n, c, h, w;
    std::int64_t size;  // channels in the window (across channels, as AlexNet)
    float alpha, beta, k;
    Layout layout;
    auto operator<=>(const LrnConfig&) const = default;
};

// y = x / (k + alpha / size * sum_{window} x^2) ^ beta   (PyTorch's and Caffe's definition)
struct LrnKernel {
    static constexpr const char* kName = "LRN";
    using Config = LrnConfig;
    virtual ~LrnKernel() = default;
    virtual std::size_t workspace_bytes() const = 0;
    virtual void forward(const Tensor& src, Tensor& dst, Tensor& workspace) = 0;
    virtual void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& workspace,
                          Tensor& diff_src) = 0;
};

struct LinearConfig {
    std::int64_t n, in_features, out_features;
    bool bias;
    Precision precision = Precision::fp32;  // device/precision.h
    auto operator<=>(const LinearConfig&) const = default;
};

// src: n x in, weights: out x in, bias: out, dst: n x out; all contiguous.
struct LinearKernel : WeightedKernel {
    static constexpr const char* kName = "Linear";
    using Config = LinearConfig;
};

struct DropoutConfig {
    std::int64_t numel;
    auto operator<=>(const DropoutConfig&) const = default;
};

// Element i (logical NCHW index) is kept when rng_uniform(key, first + i) >= p, then scaled by
// 1 / (1 - p), so every backend draws the same mask. `first` is the logical index of src's
// first element in the whole batch: a micro-batch then draws the very mask the whole batch
// would, whatever the split. mask: numel u8 (1 kept, 0 dropped).
struct DropoutKernel {
    static constexpr const char* kName = "Dropout";
    using Config = DropoutConfig;
    virtual ~DropoutKernel() = default;
    virtual void forward(const Tensor& src, float p, std::uint64_t key, std::uint64_t first,
                         Tensor& mask, Tensor& dst) = 0;
    virtual void backward(const Tensor& diff_dst, const Tensor& mask, float p,
                          Tensor& diff_src) = 0;
};

struct SoftmaxCrossEntropyConfig {
    std::int64_t n, classes;
    auto operator<=>(const SoftmaxCrossEntropyConfig&) const = default;
};

struct LossSums {
    double loss = 0;           // summed over the samples (divide by count for the mean)
    std::int64_t correct = 0;  // samples whose arg-max logit is the label
    std::int64_t count = 0;
};

// logits: n x classes f32; labels: n i32 in [0, classes); probabilities: n x classes.
// With smoothing s the target is (1 - s) one-hot + s / classes.
struct SoftmaxCrossEntropyKernel {
    static constexpr const char* kName = "SoftmaxCrossEntropy";
    using Config = SoftmaxCrossEntropyConfig;
    virtual ~SoftmaxCrossEntropyKernel() = default;
    // Throws DataError naming the sample (counted from 1, as the Lua API counts) when a label is
    // out of range.
    virtual LossSums forward(const Tensor& logits, const Tensor& labels, float smoothing,
                             Tensor& probabilities) = 0;
    // diff_logits = scale * (probabilities - target).
    virtual void backward(const Tensor& probabilities, const Tensor& labels, float smoothing,
                          float scale, Tensor& diff_logits) = 0;
};

enum class ElementLossKind { mse, bce_with_logits };

struct ElementLossConfig {
    ElementLossKind kind;
    std::int64_t n, elements;  // samples, and elements per sample
    auto operator<=>(const ElementLossConfig&) const = default;
};

// output, targets, diff: n x elements f32 in storage order (same shape and layout; a sample's
// elements are contiguous in either layout). Per sample i, loss_i = mean_j f(y_ij, t_ij) with
// MSE f = (y - t)^2 and BCEWithLogits f = max(y, 0) - y t + log1p(exp(-|y|)).
struct ElementLossKernel {
    static constexpr const char* kName = "ElementLoss";
    using Config = ElementLossConfig;
    virtual ~ElementLossKernel() = default;
    // Sums of loss_i; correct: BCEWithLogits samples whose every (y > 0) equals (t > 0.5).
    virtual LossSums forward(const Tensor& output, const Tensor& targets) = 0;
    // diff = scale * f'(y, t) / elements: MSE 2 (y - t), BCEWithLogits sigmoid(y) - t.
    virtual void backward(const Tensor& output, const Tensor& targets, float scale,
                          Tensor& diff) = 0;
};

struct SoftmaxConfig {
    std::int64_t outer, size, inner;  // the dimension's span in storage (layers/slice.h)
    bool log;                         // log_softmax
    auto operator<=>(const SoftmaxConfig&) const = default;
};

// softmax (log_softmax) along one dimension of src, dst in the same layout (device/row_math.h).
struct SoftmaxKernel {
    static constexpr const char* kName = "Softmax";
    using Config = SoftmaxConfig;
    virtual ~SoftmaxKernel() = default;
    virtual void forward(const Tensor& src, Tensor& dst) = 0;
    // From forward's dst.
    virtual void backward(const Tensor& dst, const Tensor& diff_dst, Tensor& diff_src) = 0;
};

struct LayerNormConfig {
    std::int64_t rows, cols;  // normalised over each row of cols contiguous elements
    float eps;
    bool affine;
    auto operator<=>(const LayerNormConfig&) const = default;
};

// Layer norm over rows (device/row_math.h); gamma, beta: cols floats (undefined without affine);
// mean, rstd: rows floats forward fills for backward. backward ADDS into diff_gamma, diff_beta.
struct LayerNormKernel {
    static constexpr const char* kName = "LayerNorm";
    using Config = LayerNormConfig;
    virtual ~LayerNormKernel() = default;
    virtual void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& dst,
                         Tensor& mean, Tensor& rstd) = 0;
    virtual void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                          const Tensor& mean, const Tensor& rstd, Tensor& diff_src,
                          Tensor& diff_gamma, Tensor& diff_beta) = 0;
};

struct EmbeddingConfig {
    std::int64_t count, rows, dim;  // indices looked up; rows and width of the table
    auto operator<=>(const EmbeddingConfig&) const = default;
};

// indices: count f32 holding whole numbers in [0, rows) (what the data pipeline delivers);
// weights: rows x dim; dst: count x dim, row i = weights[indices[i]].
struct EmbeddingKernel {
    static constexpr const char* kName = "Embedding";
    using Config = EmbeddingConfig;
    virtual ~EmbeddingKernel() = default;
    // Throws DataError naming the first bad index (position counted from 1) and its value.
    virtual void forward(const Tensor& indices, const Tensor& weights, Tensor& dst) = 0;
    // diff_weights[indices[i]] += diff_dst[i], in the samples' order on the CPU and on a
    // device in deterministic mode (Device::deterministic); otherwise on a GPU in no fixed order.
    virtual void backward(const Tensor& indices, const Tensor& diff_dst, Tensor& diff_weights) = 0;
};

enum class RnnCellKind { lstm, gru };

struct RnnCellConfig {
    RnnCellKind kind;
    std::int64_t n, hidden;
    auto operator<=>(const RnnCellConfig&) const = default;
};

// One time step of a recurrent layer's cell, PyTorch's definitions, after the two projections
// (gx = W_ih x + b_ih and gh = W_hh h_prev + b_hh, n x G*hidden, gates in PyTorch's order):
//   LSTM (G = 4: i, f, g, o): c = f * c_prev + i * g,  h = o * tanh(c)
//   GRU  (G = 3: r, z, n):    n = tanh(gx_n + r * gh_n),  h = (1 - z) * n + z * h_prev
// saved (n x kSavedGates * hidden) keeps the activated gates for backward (the GRU: r, z, n and
// gh_n). Every tensor is contiguous; c_prev and c are undefined for the GRU.
struct RnnCellKernel {
    static constexpr const char* kName = "RnnCell";
    using Config = RnnCellConfig;
    virtual ~RnnCellKernel() = default;
    static std::int64_t gates(RnnCellKind kind) { return kind == RnnCellKind::lstm ? 4 : 3; }
    static constexpr std::int64_t kSavedGates = 4;
    virtual void forward(const Tensor& gx, const Tensor& gh, const Tensor& h_prev,
                         const Tensor& c_prev, Tensor& h, Tensor& c, Tensor& saved) = 0;
    // From dh and dc (the LSTM's; the gradients of this step's h and c): dgx and dgh, the
    // gradients of the two projections' outputs; dh_prev, of h_prev by its direct path (the
    // GRU's z * h_prev; zero for the LSTM); dc_prev (the LSTM's). All overwritten.
    virtual void backward(const Tensor& saved, const Tensor& h_prev, const Tensor& c_prev,
                          const Tensor& c, const Tensor& dh, const Tensor& dc, Tensor& dgx,
                          Tensor& dgh, Tensor& dh_prev, Tensor& dc_prev) = 0;
};

struct RnnSequenceConfig {
    RnnCellKind kind;
    std::int64_t n, steps, input, hidden, layers;
    bool bias;
    auto operator<=>(const RnnSequenceConfig&) const = default;
};

// One layer's parameters as the recurrent layer holds them (PyTorch's shapes and gate orders:
// w_ih G*hidden x in, w_hh G*hidden x hidden, b_ih and b_hh G*hidden; biases undefined
// without bias). For gradients, the tensors the kernel adds into.
struct RnnLayerParams {
    Tensor w_ih, w_hh, b_ih, b_hh;
};

// A whole stack of recurrent layers over whole sequences, with RnnCellKernel's definitions:
// what a device kind MAY offer beside the cell (optional: the CPU does not, and the layer
// then steps through time with the cell). CUDA: cuDNN's RNN API.
//   src N x steps x input and dst N x steps x hidden, batch first; h0, c0 layers x N x hidden
//   (undefined: zero; c0 the LSTM's only). All contiguous.
struct RnnSequenceKernel {
    static constexpr const char* kName = "RnnSequence";
    using Config = RnnSequenceConfig;
    virtual ~RnnSequenceKernel() = default;
    // Bytes of the packed weights forward writes (backward reads them), and of the reserve
    // space a training forward fills for backward: u8 tensors the layer allocates and keeps
    // per micro-batch.
    virtual std::size_t packed_bytes() const = 0;
    virtual std::size_t reserve_bytes() const = 0;
    // Packs `weights` (one entry per layer) into `packed`, then runs every layer. A defined
    // `reserve` makes it a training forward (filled for backward); undefined, inference.
    virtual void forward(const Tensor& src, const std::vector<RnnLayerParams>& weights,
                         const Tensor& h0, const Tensor& c0, Tensor& packed, Tensor& dst,
                         Tensor& reserve) = 0;
    // From a training forward's src, dst, h0, c0, packed and reserve (which it may change):
    // diff_src, and diff_h0 / diff_c0 where defined (all overwritten); ADDS the gradients of
    // the weights and biases into diff_weights.
    virtual void backward(const Tensor& src, const Tensor& dst, const Tensor& diff_dst,
                          const Tensor& h0, const Tensor& c0, const Tensor& packed, Tensor& reserve,
                          Tensor& diff_src, Tensor& diff_h0, Tensor& diff_c0,
                          const std::vector<RnnLayerParams>& diff_weights) = 0;
};

struct SgdHyper {
    float lr, momentum, dampening, weight_decay;
    bool nesterov;
};

// One Adam (AdamW) step's numbers; the bias corrections of the parameter's step t come worked
// out: step_size = lr / (1 - beta1^t), bias_correction2_sqrt = sqrt(1 - beta2^t).
struct AdamHyper {
    float lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
    bool decoupled = false;  // AdamW
    float step_size = 0, bias_correction2_sqrt = 1;
};

// A strided block copy in storage elements: `rows` runs of `width` elements, run r read from
// the source at src_offset + r * src_pitch and written at dst_offset + r * dst_pitch. How a
// slice along one dimension of either layout moves (Concat, Narrow: layers/slice.h).
struct RowCopy {
    std::int64_t rows = 0, width = 0;
    std::int64_t src_offset = 0, src_pitch = 0;
    std::int64_t dst_offset = 0, dst_pitch = 0;
};

// Throws when `copy` reads or writes outside src or dst (every backend's copy_rows checks).
void check_row_copy(const Tensor& src, const Tensor& dst, const RowCopy& copy);

struct TensorOpsConfig {
    auto operator<=>(const TensorOpsConfig&) const = default;
};

// The small element-wise operations layers, containers and optimizers need on a device.
struct TensorOpsKernel {
    static constexpr const char* kName = "TensorOps";
    using Config = TensorOpsConfig;
    virtual ~TensorOpsKernel() = default;
    // dst = a + b; all three the same shape and layout.
    virtual void add(const Tensor& a, const Tensor& b, Tensor& dst) = 0;
    // dst = max(0, a + b) in one pass (a residual block's add with the ReLU after it).
    virtual void add_relu(const Tensor& a, const Tensor& b, Tensor& dst) = 0;
    // dst = a * b element-wise; all three the same shape and layout.
    virtual void multiply(const Tensor& a, const Tensor& b, Tensor& dst) = 0;
    // dst += src; same shape and layout.
    virtual void accumulate(Tensor& dst, const Tensor& src) = 0;
    virtual void fill(Tensor& dst, float value) = 0;
    virtual void scale(Tensor& dst, float factor) = 0;
    // dst = keep * dst + take * src; same shape and layout (one pass: a running average).
    virtual void blend(Tensor& dst, float keep, const Tensor& src, float take) = 0;
    // dst = src across layouts (same shape and dtype).
    virtual void copy(const Tensor& src, Tensor& dst) = 0;
    // The rows `copy` describes, from src's storage into dst's (same dtype; both in bounds).
    virtual void copy_rows(const Tensor& src, Tensor& dst, const RowCopy& copy) = 0;
    // One SGD step on one parameter (PyTorch's definition, momentum buffer updated in place):
    //   g = grad + wd * w;  buf = momentum * buf + (1 - dampening) * g  (buf = g on first use,
    //   signalled by first_step);  d = nesterov ? g + momentum * buf : buf;  w -= lr * d.
    virtual void sgd_update(Tensor& weights, const Tensor& grad, Tensor& momentum_buffer,
                            const SgdHyper& hyper, bool first_step) = 0;
    // One Adam or AdamW step on one parameter (PyTorch's single-tensor definition, both moments
    // updated in place):  AdamW: w *= 1 - lr * wd, g = grad;  Adam: g = grad + wd * w;
    //   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g;
    //   w -= step_size * m / (sqrt(v) / bias_correction2_sqrt + eps).
    virtual void adam_update(Tensor& weights, const Tensor& grad, Tensor& exp_avg,
                             Tensor& exp_avg_sq, const AdamHyper& hyper) = 0;
    // sum of squares (double accumulation), for gradient norms and tests.
    virtual double sum_squares(const Tensor& src) = 0;
    // Loss scaling's unscale: every tensor *= factor in place, and whether all their values are
    // finite after it. One pass over each, and on a GPU one wait for the answer for all of them.
    virtual bool unscale(const std::vector<Tensor*>& tensors, float factor) = 0;
};

}  // namespace tandem

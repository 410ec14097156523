// Attention: what the two attention layers (scaled_dot_product_attention.h, additive_attention.h)
// share once each has its scores: the softmax over the keys, the weighted sum of the values,
// their backward, and the weights of the last forward kept for reading (the third seed's
// attention network is there for interpretability: which steps a prediction looked at).
//
// Inputs are batch first: queries N x Tq x ., keys N x Tk x ., values N x Tk x dv; weights
// N x Tq x Tk (row i: how query i spreads over the keys, summing to 1); output N x Tq x dv.
#pragma once

#include "layers/attention_kernel.h"
#include "layers/kernel_cache.h"
#include "layers/merge.h"

namespace tandem {

class Attention : public Merge {
public:
    // The attention weights of the last forward, training or evaluation (N x Tq x Tk, on the
    // device that ran it). When a batch is cut into micro-batches, the last micro-batch's; in an
    // engine with several groups, group 1's (the net the recipe built). Undefined before any
    // forward. Holding them keeps that one tensor alive between steps.
    const Tensor& attention_weights() const { return weights_; }

protected:
    AttentionKernel& attention_kernel(Device& device);
    // weights = softmax(scores) over the keys, kept for attention_weights().
    Tensor softmax_over_keys(const Tensor& scores, Device& device);
    // y = weights values: N x Tq x dv.
    Tensor weighted_sum(const Tensor& weights, const Tensor& values, Device& device);
    // The scores' gradient from the output's (dy, contiguous): softmax backward of dy values^T.
    Tensor scores_gradient(const Tensor& weights, const Tensor& values, const Tensor& dy, Device& device);
    // d_values = weights^T dy, written, or added when accumulate (values that are also the keys).
    void values_gradient(const Tensor& weights, const Tensor& dy, Tensor& d_values, bool accumulate, Device& device);

    // Throws ShapeError naming the layer unless `shape` is N x steps x features (batch first).
    void check_sequence(const Shape& shape, const char* what) const;

private:
    SoftmaxKernel& softmax(Device& device, std::int64_t rows, std::int64_t keys);

    Tensor weights_;
    KernelCache<AttentionKernel> kernels_;
    KernelCache<SoftmaxKernel> softmaxes_;
};

}  // namespace tandem

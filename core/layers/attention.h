// Attention: what the two attention layers (scaled_dot_product_attention.h, additive_attention.h)
// share once each has its scores: the softmax over the keys, the weighted sum of the values,
// their backward, and the weights of the last forward kept for reading (the third seed's
// attention network is there for interpretability: which steps a prediction looked at).
//
// Inputs are batch first: queries N x Tq x ., keys N x Tk x ., values N x Tk x dv; weights
// N x Tq x Tk (row i: how query i spreads over the keys, summing to 1); output N x Tq x dv.
#pragma once

#include "kernels/attention_kernel.h"
#include "kernels/kernel_cache.h"
#include "layers/merge.h"

namespace tandem {

class Attention : public Merge {
public:
    // Queries and keys, and values when they are not the keys.
    std::size_t min_inputs() const override { return 2; }
    std::size_t max_inputs() const override { return 3; }

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
    Tensor scores_gradient(const Tensor& weights, const Tensor& values, const Tensor& dy,
                           Device& device);
    // The inputs' gradients {dq, dk[, dv]} once dq and dk hold the scores' share: the values'
    // (weights^T dy) added into dk when the keys are the values, else a third gradient.
    std::vector<Tensor> with_values_gradient(const std::vector<Tensor>& xs, const Tensor& weights,
                                             const Tensor& dy, Tensor dq, Tensor dk,
                                             Device& device);

    // Checks what every attention needs of its inputs (q, k[, v]; v is k when two): two or three,
    // each N x steps x features with one N, a value for each key. Throws ConfigError or
    // ShapeError naming the layer and the shapes; returns the shapes as messages show them,
    // " (query 8x3x16, key and value 8x7x16)", for the layer's own checks.
    std::string check_inputs(const std::vector<Shape>& inputs) const;
    // The values: the third input, or the keys when there are two.
    static const Tensor& values_of(const std::vector<Tensor>& xs) { return xs.back(); }
    // q, k, v: N x Tq x dv.
    static Shape output_of(const std::vector<Shape>& inputs) {
        return Shape{inputs[0][0], inputs[0][1], inputs.back()[2]};
    }

private:
    SoftmaxKernel& softmax(Device& device, std::int64_t rows, std::int64_t keys);

    Tensor weights_;
    KernelCache<AttentionKernel> kernels_;
    KernelCache<SoftmaxKernel> softmaxes_;
};

}  // namespace tandem

// CrossEntropy: the loss at the end of a classifier, softmax and cross-entropy in one step
// (log-softmax is what keeps it stable). Not a Layer: it takes labels and returns sums, and
// its backward starts the chain instead of receiving a gradient.
//
// Per sample i with K classes and smoothing s: target = (1 - s) one-hot(label) + s / K and
// loss_i = -sum_j target_j * log softmax(logits_i)_j (PyTorch's label_smoothing).
// forward() returns the loss summed over the samples (not averaged: micro-batches and groups
// add their sums, and the engine divides by the global batch through backward's scale).
#pragma once

#include "layers/kernel_cache.h"
#include "layers/pass.h"

namespace tandem {

class CrossEntropy {
public:
    // Throws ConfigError unless 0 <= label_smoothing < 1.
    explicit CrossEntropy(float label_smoothing = 0.f);

    float label_smoothing() const { return label_smoothing_; }

    // logits: N x K f32; labels: N i32 values in [0, K) (any shape with N elements).
    // In training mode keeps the probabilities in pass.saved (keyed by this) for backward.
    // Throws ShapeError naming both shapes, DataError naming the sample and label out of range.
    LossSums forward(const Tensor& logits, const Tensor& labels, Pass& pass);

    // d(scale * sum of per-sample losses) / d logits; scale = 1 / global batch gives the mean.
    // Uses (and releases) the probabilities forward kept; recomputes them from the logits when
    // there are none (an evaluation-mode forward, or none at all).
    Tensor backward(const Tensor& logits, const Tensor& labels, float scale, Pass& pass);

private:
    SoftmaxCrossEntropyKernel& kernel(const Tensor& logits, const Tensor& labels, Pass& pass);

    float label_smoothing_;
    KernelCache<SoftmaxCrossEntropyKernel> kernels_;
};

}  // namespace tandem

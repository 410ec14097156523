// CrossEntropy: the loss at the end of a classifier, softmax and cross-entropy in one step
// (log-softmax is what keeps it stable). Its targets are class labels.
//
// Per sample i with K classes and smoothing s: target = (1 - s) one-hot(label) + s / K and
// loss_i = -sum_j target_j * log softmax(logits_i)_j (PyTorch's label_smoothing).
#pragma once

#include "kernels/kernel_cache.h"
#include "layers/loss.h"

namespace tandem {

class CrossEntropy final : public Loss {
public:
    // Throws ConfigError unless 0 <= label_smoothing < 1.
    explicit CrossEntropy(float label_smoothing = 0.f);

    float label_smoothing() const { return label_smoothing_; }
    std::string_view kind() const override { return "CrossEntropy"; }
    std::string options_text() const override;
    std::shared_ptr<Loss> clone() const override {
        return std::make_shared<CrossEntropy>(label_smoothing_);
    }
    Targets targets() const override { return Targets::class_labels; }
    bool has_accuracy() const override { return true; }

    // logits: N x K f32; labels: N i32 values in [0, K) (any shape with N elements).
    // In training mode keeps the probabilities in pass.saved (keyed by this) for backward.
    // Throws ShapeError naming both shapes, DataError naming the sample and label out of range.
    LossSums forward(const Tensor& logits, const Tensor& labels, Pass& pass) override;

    // d(scale * sum of per-sample losses) / d logits; scale = 1 / global batch gives the mean.
    // Uses (and releases) the probabilities forward kept; recomputes them from the logits when
    // there are none (an evaluation-mode forward, or none at all).
    Tensor backward(const Tensor& logits, const Tensor& labels, float scale, Pass& pass) override;

private:
    SoftmaxCrossEntropyKernel& kernel(const Tensor& logits, const Tensor& labels, Pass& pass);

    float label_smoothing_;
    KernelCache<SoftmaxCrossEntropyKernel> kernels_;
};

}  // namespace tandem

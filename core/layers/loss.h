// Loss: what ends a net in training. Not a Layer: it takes targets besides the net's output,
// returns sums instead of a tensor, and its backward starts the chain instead of receiving a
// gradient.
//
// forward() returns the loss summed over the samples (not averaged: micro-batches and groups
// add their sums, and the engine divides by the global batch through backward's scale). A
// sample's loss is the mean over its output's elements where the output has several (MSE,
// BCEWithLogits), so the batch's mean is PyTorch's reduction = 'mean'.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "kernels/kernels.h"
#include "layers/pass.h"

namespace tandem {

class Loss {
public:
    virtual ~Loss() = default;

    virtual std::string_view kind() const = 0;               // "CrossEntropy", "MSE"
    virtual std::string options_text() const { return {}; }  // "label_smoothing 0.1"
    // "CrossEntropy(label_smoothing 0.1)": how print() and messages show it.
    std::string description() const;
    // A loss with the same options (each worker group uses its own: kernels are cached per
    // object).
    virtual std::shared_ptr<Loss> clone() const = 0;

    // What the targets are: class labels (i32, one per sample) or values (f32, shaped as the
    // net's output).
    enum class Targets { class_labels, values };
    virtual Targets targets() const = 0;
    // Whether LossSums::correct counts samples classified right (an accuracy to report).
    virtual bool has_accuracy() const = 0;

    // In training mode may keep what backward needs in pass.saved (keyed by this).
    // ShapeError naming both shapes when the targets do not fit the output.
    virtual LossSums forward(const Tensor& output, const Tensor& targets, Pass& pass) = 0;
    // d(scale * sum of per-sample losses) / d output; scale = 1 / global batch gives the mean.
    virtual Tensor backward(const Tensor& output, const Tensor& targets, float scale,
                            Pass& pass) = 0;

    // ShapeError unless `given` suit a batch of `samples` (the dtype and first dimension this
    // loss takes): said before a step starts, in the user's terms.
    void check_batch_targets(const Tensor& given, std::int64_t samples) const;
    // Targets a profile or a planner can time this loss with, for an `output` of this shape on
    // `device`: labels drawn in [0, classes) (classes 0: the output's width), or values in [0, 1).
    Tensor example_targets(const Shape& output, std::int64_t classes, std::uint64_t seed,
                           Device& device) const;
};

}  // namespace tandem

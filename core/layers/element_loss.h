// Losses over every element of the output against targets of the same shape (PyTorch's
// reduction = 'mean': a sample's loss is the mean over its elements):
//   MSE:            (y - t)^2                                           (nn.MSELoss)
//   BCEWithLogits:  max(y, 0) - y t + log(1 + exp(-|y|)), y the logit   (nn.BCEWithLogitsLoss)
// BCEWithLogits counts a sample right when every element is on the side of 0 its target is on
// the side of 0.5 of (exact match: plain binary accuracy for one output); MSE has no accuracy.
// Targets in another layout than the output (a 4-D output in channels_last) are reordered first.
#pragma once

#include "kernels/kernel_cache.h"
#include "layers/loss.h"

namespace tandem {

class ElementLoss final : public Loss {
public:
    explicit ElementLoss(ElementLossKind kind) : kind_(kind) {}

    std::string_view kind() const override;
    std::shared_ptr<Loss> clone() const override { return std::make_shared<ElementLoss>(kind_); }
    Targets targets() const override { return Targets::values; }
    bool has_accuracy() const override { return kind_ == ElementLossKind::bce_with_logits; }

    LossSums forward(const Tensor& output, const Tensor& targets, Pass& pass) override;
    Tensor backward(const Tensor& output, const Tensor& targets, float scale, Pass& pass) override;

private:
    // The kernel for `output`, and `targets` on its device and in its layout (in training, the
    // forward keeps them in pass.saved so that backward does not move them again).
    ElementLossKernel& kernel(const Tensor& output, const Tensor& targets, Pass& pass,
                              Tensor& placed);

    ElementLossKind kind_;
    KernelCache<ElementLossKernel> kernels_;
};

}  // namespace tandem

// Softmax and LogSoftmax along one dimension (PyTorch's nn.Softmax(dim) / nn.LogSoftmax): the
// weights of an attention, or probabilities to read. Not the loss's softmax: CrossEntropy
// takes logits.
//
// `dim` counts from 0 here, or from the end when negative (-1: the last); it cannot be the
// batch. Either layout; backward uses the forward's output, kept in the pass's tape.
#pragma once

#include "kernels/kernel_cache.h"
#include "layers/layer.h"

namespace tandem {

class Softmax final : public Layer {
public:
    Softmax(int dim, bool log);
    std::string_view kind() const override { return log_ ? "LogSoftmax" : "Softmax"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<Softmax>(dim_, log_)); }
    std::string options_text() const override;

    // Throws ShapeError naming the layer when dim is not a dimension of the input, or the batch.
    Shape output_shape(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;

private:
    int resolved(int rank) const;
    SoftmaxKernel& kernel(Device& device, const Tensor& x);

    int dim_;
    bool log_;
    KernelCache<SoftmaxKernel> kernels_;
};

}  // namespace tandem

// BatchNorm2d: y = gamma * (x - mean) / sqrt(var + epsilon) + beta, per channel of N x C x H x W.
//
// Training normalises with the batch's statistics (biased variance), keeps them in the pass's
// tape for backward, and folds them into the running statistics as PyTorch does:
//   running_mean = (1 - momentum) * running_mean + momentum * mean
//   running_var  = (1 - momentum) * running_var  + momentum * var * n / (n - 1),  n = N*H*W.
// Evaluation normalises with the running statistics; its backward treats them as constants.
#pragma once

#include "kernels/kernel_cache.h"
#include "layers/layer.h"

namespace tandem {

struct BatchNorm2dOptions {
    std::int64_t channels = 0;
    float epsilon = 1e-5f;
    float momentum = 0.1f;
};

class BatchNorm2d final : public Layer {
public:
    // Throws ConfigError for channels <= 0, epsilon <= 0 or momentum outside [0, 1].
    explicit BatchNorm2d(const BatchNorm2dOptions& options);

    std::string_view kind() const override { return "BatchNorm2d"; }
    LayerPtr clone() const override {
        return finish_clone(std::make_shared<BatchNorm2d>(options_));
    }
    Shape output_shape(const Shape& input) const override;
    MemoryEstimate memory_estimate(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;
    // In training, on a device kind with a fused kernel (BatchNormReluKernel) that the layer's
    // kernel choice allows.
    bool takes_relu(const Pass& pass) const override;
    Tensor forward_relu(const Tensor& x, Pass& pass) override;
    Tensor backward_relu(const Tensor& x, const Tensor& dy, Pass& pass) override;
    std::vector<Parameter*> parameters() override { return {&weight_, &bias_}; }
    std::vector<Parameter*> buffers() override { return {&running_mean_, &running_var_}; }
    // gamma = 1, beta = 0, running statistics reset (nothing random to draw).
    void initialize(std::uint64_t seed) override;
    std::string options_text() const override;

    // With pass.sum_over_replicas set (synchronised batch norm, training): every micro-batch
    // is normalised with the statistics of all of them on every replica (the global batch),
    // and backward uses the global sums, so the result is one device's on the whole batch.
    // Otherwise each micro-batch goes through forward() / backward() on its own.
    // (batch_norm2d_sync.cpp: from the layer's kernels, so on any device; only per-channel
    // sums go through the host and the replicas.)
    std::vector<Tensor> forward_many(const std::vector<Tensor>& xs,
                                     const std::vector<Pass*>& passes) override;
    std::vector<Tensor> backward_many(const std::vector<Tensor>& xs, const std::vector<Tensor>& dys,
                                      const std::vector<Pass*>& passes) override;

    // Folds batch statistics (mean and biased variance, C floats each, over `count` values per
    // channel) into the running statistics. forward() calls it in training; a pipeline calls it
    // with statistics gathered over a whole batch. Throws ShapeError for wrong sizes and when
    // count < 2 (the unbiased variance needs two values).
    void update_running_stats(const Tensor& mean, const Tensor& var, std::int64_t count);

    const BatchNorm2dOptions& options() const { return options_; }

protected:
    void on_bind(Device& device, const Shape& input, Layout layout) override;

private:
    BatchNormKernel& kernel(Device& device, const Shape& shape, Layout layout, bool training);
    BatchNormReluKernel& relu_kernel(Device& device, const Shape& shape, Layout layout);
    // Training's batch statistics: the values per channel, checked to be more than one.
    std::int64_t values_per_channel(const Shape& shape) const;
    // Training's statistics of a batch into the running ones (or the pass's gatherer).
    void note_batch_statistics(const Tensor& mean, const Tensor& var, std::int64_t count,
                               Pass& pass);

    BatchNorm2dOptions options_;
    Parameter weight_;
    Parameter bias_;
    Parameter running_mean_;
    Parameter running_var_;
    KernelCache<BatchNormKernel> kernels_;
    KernelCache<BatchNormReluKernel> relu_kernels_;
};

}  // namespace tandem

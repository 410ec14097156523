// 2-D pooling over N x C x H x W: MaxPool2d, AvgPool2d and GlobalAvgPool2d.
//
// Output size follows PyTorch: floor((H + 2 pad - kernel) / stride) + 1, or with ceil_mode
// rounded up, dropping a last window that would start beyond the input and left padding.
// Max pooling keeps its kernel's workspace (argmax positions) in the pass's tape in training;
// evaluation runs without one, and a backward in evaluation recomputes it.
#pragma once

#include "kernels/kernel_cache.h"
#include "layers/layer.h"

namespace tandem {

struct Pool2dOptions {
    std::int64_t kernel_h = 0, kernel_w = 0;
    std::int64_t stride_h = 0, stride_w = 0;  // 0 means equal to the kernel
    std::int64_t pad_h = 0, pad_w = 0;
    bool ceil_mode = false;
    bool count_include_pad = true;  // average pooling: divide by the window including padding
};

// The common part of the pooling layers; not constructed directly.
class Pool2d : public Layer {
public:
    Shape output_shape(const Shape& input) const override;
    MemoryEstimate memory_estimate(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;
    std::string options_text() const override;
    // With strides resolved (never 0).
    const Pool2dOptions& options() const { return options_; }

protected:
    // Checks `options` (ConfigError naming `kind`) unless `global`, and resolves strides.
    Pool2d(std::string_view kind, PoolKind pool, const Pool2dOptions& options, bool global);
    void on_bind(Device& device, const Shape& input, Layout layout) override;

private:
    // The kernel configuration for an input (a global pool's window is the whole plane).
    Pool2dConfig config(const Shape& input, Layout layout) const;
    Pool2dKernel& kernel(Device& device, const Shape& input, Layout layout);

    PoolKind pool_;
    Pool2dOptions options_;
    bool global_;
    KernelCache<Pool2dKernel> kernels_;
};

class MaxPool2d final : public Pool2d {
public:
    // Throws ConfigError for a kernel <= 0, a negative stride or padding, or a padding over
    // half the kernel (PyTorch's limit, which keeps every window on the input).
    explicit MaxPool2d(const Pool2dOptions& options)
        : Pool2d("MaxPool2d", PoolKind::max, options, false) {}
    std::string_view kind() const override { return "MaxPool2d"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<MaxPool2d>(options())); }
};

class AvgPool2d final : public Pool2d {
public:
    // Throws ConfigError as MaxPool2d does.
    explicit AvgPool2d(const Pool2dOptions& options)
        : Pool2d("AvgPool2d", PoolKind::average, options, false) {}
    std::string_view kind() const override { return "AvgPool2d"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<AvgPool2d>(options())); }
};

// The mean of each channel over H x W: N x C x H x W -> N x C x 1 x 1.
class GlobalAvgPool2d final : public Pool2d {
public:
    GlobalAvgPool2d() : Pool2d("GlobalAvgPool2d", PoolKind::average, {}, true) {}
    std::string_view kind() const override { return "GlobalAvgPool2d"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<GlobalAvgPool2d>()); }
};

}  // namespace tandem

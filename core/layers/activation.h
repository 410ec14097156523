// Element-wise activations, one layer class for all (issue 18): ReLU, LeakyReLU, Sigmoid, Tanh
// and GELU (exact, or its tanh approximation), as PyTorch defines them
// (device/activation_math.h). The algorithm gives the layer's kind, so each prints, names and
// profiles as a kind of its own ("gelu1"), while one kernel kind serves them all.
//
// Backward reads forward's output for ReLU, Sigmoid and Tanh (kept in the pass: the next layer
// holds that tensor anyway) and the layer's input for LeakyReLU and GELU (which backward is
// given), so no activation keeps memory of its own.
#pragma once

#include "kernels/kernel_cache.h"
#include "layers/layer.h"

namespace tandem {

class Activation : public Layer {
public:
    // alpha: LeakyReLU's negative slope (a finite number, ConfigError otherwise); 0 for others.
    explicit Activation(ActivationAlgorithm algorithm, float alpha = 0.f);

    ActivationAlgorithm algorithm() const { return algorithm_; }
    float alpha() const { return alpha_; }

    std::string_view kind() const override { return activation_name(algorithm_); }
    LayerPtr clone() const override;
    Shape output_shape(const Shape& input) const override { return input; }
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;
    // PyTorch's repr: "negative_slope = 0.01", "approximate = 'tanh'"; empty without options.
    std::string options_text() const override;

protected:
    void on_bind(Device& device, const Shape& input, Layout layout) override;

private:
    ActivationKernel& kernel(Device& device, const Shape& shape, Layout layout);

    ActivationAlgorithm algorithm_;
    float alpha_;
    KernelCache<ActivationKernel> kernels_;
};

// Whether `layer` is a ReLU (an Activation of that algorithm): what a layer before it may take
// on (Layer::takes_relu).
bool is_relu(const Layer& layer);

}  // namespace tandem

// Element-wise activations: the algorithms, and the math of each as one definition that the
// CPU reference kernel and the CUDA kernel (kernels.cu) both run. PyTorch's definitions:
//   relu        max(x, 0)
//   leaky_relu  x > 0 ? x : alpha x                                (alpha: negative_slope)
//   sigmoid     1 / (1 + e^-x)
//   tanh        tanh x
//   gelu_erf    x/2 (1 + erf(x / sqrt 2))                          (GELU)
//   gelu_tanh   x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))      (GELU, approximate = 'tanh')
// Backward takes forward's output (dst) where the derivative follows from it, as oneDNN's
// *_use_dst_for_bwd algorithms do (relu, sigmoid, tanh), and the input (src) otherwise.
#pragma once

#include <math.h>

#include "device/host_device.h"

namespace tandem {

enum class ActivationAlgorithm { relu, leaky_relu, sigmoid, tanh, gelu_erf, gelu_tanh };

// The layer kind each algorithm is ("GELU" for both forms of it).
inline const char* activation_name(ActivationAlgorithm a) {
    switch (a) {
        case ActivationAlgorithm::relu: return "ReLU";
        case ActivationAlgorithm::leaky_relu: return "LeakyReLU";
        case ActivationAlgorithm::sigmoid: return "Sigmoid";
        case ActivationAlgorithm::tanh: return "Tanh";
        case ActivationAlgorithm::gelu_erf:
        case ActivationAlgorithm::gelu_tanh: return "GELU";
    }
    return "Activation";
}

TANDEM_HOST_DEVICE constexpr bool activation_backward_uses_dst(ActivationAlgorithm a) {
    return a == ActivationAlgorithm::relu || a == ActivationAlgorithm::sigmoid ||
           a == ActivationAlgorithm::tanh;
}

namespace activation_constants {
constexpr float kSqrtHalf = 0.70710678118654752f;     // 1 / sqrt 2
constexpr float kInvSqrt2Pi = 0.39894228040143268f;   // 1 / sqrt(2 pi)
constexpr float kSqrt2OverPi = 0.79788456080286536f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;
}  // namespace activation_constants

TANDEM_HOST_DEVICE inline float activation_forward(ActivationAlgorithm a, float alpha, float x) {
    using namespace activation_constants;
    switch (a) {
        case ActivationAlgorithm::relu: return x > 0 ? x : 0.f;
        case ActivationAlgorithm::leaky_relu: return x > 0 ? x : alpha * x;
        case ActivationAlgorithm::sigmoid: return 1.f / (1.f + expf(-x));
        case ActivationAlgorithm::tanh: return tanhf(x);
        case ActivationAlgorithm::gelu_erf: return 0.5f * x * (1.f + erff(x * kSqrtHalf));
        case ActivationAlgorithm::gelu_tanh:
            return 0.5f * x * (1.f + tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
    }
    return x;
}

// diff_src of one element; `saved` is its dst or src, as activation_backward_uses_dst says.
TANDEM_HOST_DEVICE inline float activation_backward(ActivationAlgorithm a, float alpha, float saved,
                                                    float dy) {
    using namespace activation_constants;
    switch (a) {
        case ActivationAlgorithm::relu: return saved > 0 ? dy : 0.f;
        case ActivationAlgorithm::leaky_relu: return saved > 0 ? dy : alpha * dy;
        case ActivationAlgorithm::sigmoid: return dy * saved * (1.f - saved);
        case ActivationAlgorithm::tanh: return dy * (1.f - saved * saved);
        case ActivationAlgorithm::gelu_erf: {
            const float x = saved;
            const float cdf = 0.5f * (1.f + erff(x * kSqrtHalf));
            const float pdf = kInvSqrt2Pi * expf(-0.5f * x * x);
            return dy * (cdf + x * pdf);
        }
        case ActivationAlgorithm::gelu_tanh: {
            const float x = saved;
            const float t = tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
            const float du = kSqrt2OverPi * (1.f + 3.f * kGeluCubic * x * x);
            return dy * (0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * du);
        }
    }
    return dy;
}

}  // namespace tandem

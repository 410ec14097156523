// Element-wise activations, naive loops over activation_math.h: the oracle for the oneDNN
// kernel. Element-wise, so layout-agnostic.
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

class ActivationReference final : public ActivationKernel {
public:
    explicit ActivationReference(const ActivationConfig& config)
        : algorithm_(config.algorithm), alpha_(config.alpha) {}

    void forward(const Tensor& src, Tensor& dst) override {
        const float* x = src.data<float>();
        float* y = dst.data<float>();
        for (std::int64_t i = 0; i < src.numel(); ++i)
            y[i] = activation_forward(algorithm_, alpha_, x[i]);
    }

    void backward(const Tensor& saved, const Tensor& diff_dst, Tensor& diff_src) override {
        const float* s = saved.data<float>();
        const float* dy = diff_dst.data<float>();
        float* dx = diff_src.data<float>();
        for (std::int64_t i = 0; i < saved.numel(); ++i)
            dx[i] = activation_backward(algorithm_, alpha_, s[i], dy[i]);
    }

private:
    ActivationAlgorithm algorithm_;
    float alpha_;
};

}  // namespace

std::unique_ptr<ActivationKernel> make_activation_reference(Device&,
                                                            const ActivationConfig& config) {
    return std::make_unique<ActivationReference>(config);
}

}  // namespace tandem::cpu

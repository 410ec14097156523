// ReLU, naive loops: the oracle for the oneDNN kernel. Element-wise, so layout-agnostic.
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

class ReluReference final : public ReluKernel {
public:
    void forward(const Tensor& src, Tensor& dst) override {
        const float* x = src.data<float>();
        float* y = dst.data<float>();
        for (std::int64_t i = 0; i < src.numel(); ++i) y[i] = x[i] > 0 ? x[i] : 0.f;
    }
    void backward(const Tensor& dst, const Tensor& diff_dst, Tensor& diff_src) override {
        const float* y = dst.data<float>();
        const float* dy = diff_dst.data<float>();
        float* dx = diff_src.data<float>();
        for (std::int64_t i = 0; i < dst.numel(); ++i) dx[i] = y[i] > 0 ? dy[i] : 0.f;
    }
};

}  // namespace

std::unique_ptr<ReluKernel> make_relu_reference(Device&, const ReluConfig&) {
    return std::make_unique<ReluReference>();
}

}  // namespace tandem::cpu

// Linear, naive loops in double: the oracle for the oneDNN kernel.
#include "device/cpu/kernels_cpu.h"
#include "device/cpu/reference/rounded_operands.h"

namespace tandem::cpu {
namespace {

class LinearReference final : public LinearKernel {
public:
    explicit LinearReference(const LinearConfig& config) : c_(config) {}

    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        const float* x = src.data<float>();
        const float* w = weights.data<float>();
        const float* b = c_.bias ? bias.data<float>() : nullptr;
        float* y = dst.data<float>();
        for (std::int64_t i = 0; i < c_.n; ++i)
            for (std::int64_t o = 0; o < c_.out_features; ++o) {
                double sum = b ? b[o] : 0.0;
                for (std::int64_t k = 0; k < c_.in_features; ++k)
                    sum += double(x[i * c_.in_features + k]) * double(w[o * c_.in_features + k]);
                y[i * c_.out_features + o] = static_cast<float>(sum);
            }
    }

    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        const float* dy = diff_dst.data<float>();
        const float* w = weights.data<float>();
        float* dx = diff_src.data<float>();
        for (std::int64_t i = 0; i < c_.n; ++i)
            for (std::int64_t k = 0; k < c_.in_features; ++k) {
                double sum = 0;
                for (std::int64_t o = 0; o < c_.out_features; ++o)
                    sum += double(dy[i * c_.out_features + o]) * double(w[o * c_.in_features + k]);
                dx[i * c_.in_features + k] = static_cast<float>(sum);
            }
    }

    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        const float* x = src.data<float>();
        const float* dy = diff_dst.data<float>();
        float* dw = diff_weights.data<float>();
        for (std::int64_t o = 0; o < c_.out_features; ++o) {
            for (std::int64_t k = 0; k < c_.in_features; ++k) {
                double sum = 0;
                for (std::int64_t i = 0; i < c_.n; ++i)
                    sum += double(dy[i * c_.out_features + o]) * double(x[i * c_.in_features + k]);
                dw[o * c_.in_features + k] += static_cast<float>(sum);
            }
            if (c_.bias) {
                double sum = 0;
                for (std::int64_t i = 0; i < c_.n; ++i) sum += dy[i * c_.out_features + o];
                diff_bias.data<float>()[o] += static_cast<float>(sum);
            }
        }
    }

private:
    LinearConfig c_;
};

}  // namespace

std::unique_ptr<LinearKernel> make_linear_reference(Device&, const LinearConfig& config) {
    return in_precision<LinearKernel>(std::make_unique<LinearReference>(config), config.precision);
}

}  // namespace tandem::cpu

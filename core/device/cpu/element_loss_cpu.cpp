// MSE and BCEWithLogits on the CPU: one sample per loop iteration (OpenMP across samples), sums
// in double. BCEWithLogits is written as max(y, 0) - y t + log1p(exp(-|y|)) so that large
// logits neither overflow exp nor lose log's precision (PyTorch's form).
#include <algorithm>
#include <cmath>

#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

double element_loss(ElementLossKind kind, double y, double t) {
    if (kind == ElementLossKind::mse) return (y - t) * (y - t);
    return std::max(y, 0.0) - y * t + std::log1p(std::exp(-std::abs(y)));
}

float element_gradient(ElementLossKind kind, float y, float t) {
    if (kind == ElementLossKind::mse) return 2.f * (y - t);
    return 1.f / (1.f + std::exp(-y)) - t;
}

class ElementLossCpu final : public ElementLossKernel {
public:
    explicit ElementLossCpu(const ElementLossConfig& config) : config_(config) {}

    LossSums forward(const Tensor& output, const Tensor& targets) override {
        const float* y = output.data<float>();
        const float* t = targets.data<float>();
        const std::int64_t n = config_.n, e = config_.elements;
        const ElementLossKind kind = config_.kind;
        double loss = 0;
        std::int64_t correct = 0;
#pragma omp parallel for reduction(+ : loss, correct) if (n * e > kParallelMin)
        for (std::int64_t i = 0; i < n; ++i) {
            double sum = 0;
            bool right = true;
            for (std::int64_t j = i * e; j < (i + 1) * e; ++j) {
                sum += element_loss(kind, y[j], t[j]);
                right = right && (y[j] > 0) == (t[j] > 0.5f);
            }
            loss += sum / double(e);
            correct += right ? 1 : 0;
        }
        return {loss, kind == ElementLossKind::bce_with_logits ? correct : 0, n};
    }

    void backward(const Tensor& output, const Tensor& targets, float scale, Tensor& diff) override {
        const float* y = output.data<float>();
        const float* t = targets.data<float>();
        float* d = diff.data<float>();
        const std::int64_t total = config_.n * config_.elements;
        const float factor = scale / static_cast<float>(config_.elements);
        const ElementLossKind kind = config_.kind;
#pragma omp parallel for if (total > kParallelMin)
        for (std::int64_t j = 0; j < total; ++j) d[j] = factor * element_gradient(kind, y[j], t[j]);
    }

private:
    ElementLossConfig config_;
};

}  // namespace

std::unique_ptr<ElementLossKernel> make_element_loss_cpu(Device&, const ElementLossConfig& config) {
    return std::make_unique<ElementLossCpu>(config);
}

}  // namespace tandem::cpu

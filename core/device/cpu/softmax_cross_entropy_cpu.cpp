// Softmax + cross-entropy on the CPU, one sample per loop iteration (OpenMP across samples).
//
// Log-softmax is computed as x - max - log(sum exp(x - max)), so large logits neither overflow
// nor lose the small probabilities; sums are in double. Labels are checked in one serial pass
// before the parallel loop, because an exception must not leave an OpenMP region.
#include <cmath>

#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

class SoftmaxCrossEntropyCpu final : public SoftmaxCrossEntropyKernel {
public:
    explicit SoftmaxCrossEntropyCpu(const SoftmaxCrossEntropyConfig& config) : config_(config) {}

    LossSums forward(const Tensor& logits, const Tensor& labels, float smoothing,
                     Tensor& probabilities) override {
        check(logits, "logits");
        check(probabilities, "probabilities");
        check_labels(labels);
        const float* x = logits.data<float>();
        const int* y = labels.data<int>();
        float* prob = probabilities.data<float>();
        const std::int64_t n = config_.n, k = config_.classes;
        const double on_label = 1.0 - smoothing, per_class = double(smoothing) / double(k);
        double loss = 0;
        std::int64_t correct = 0;
#pragma omp parallel for reduction(+ : loss, correct) if (n * k > kParallelMin)
        for (std::int64_t i = 0; i < n; ++i) {
            const float* row = x + i * k;
            float* p = prob + i * k;
            std::int64_t arg_max = 0;  // the first maximum wins ties
            for (std::int64_t j = 1; j < k; ++j)
                if (row[j] > row[arg_max]) arg_max = j;
            const double max = row[arg_max];
            double sum = 0;
            for (std::int64_t j = 0; j < k; ++j) sum += std::exp(double(row[j]) - max);
            const double log_sum = max + std::log(sum);
            double sum_log_p = 0;
            for (std::int64_t j = 0; j < k; ++j) {
                const double log_p = double(row[j]) - log_sum;
                p[j] = static_cast<float>(std::exp(log_p));
                sum_log_p += log_p;
            }
            const double log_p_label = double(row[y[i]]) - log_sum;
            loss -= on_label * log_p_label + per_class * sum_log_p;
            if (arg_max == y[i]) ++correct;
        }
        return LossSums{loss, correct, n};
    }

    void backward(const Tensor& probabilities, const Tensor& labels, float smoothing, float scale,
                  Tensor& diff_logits) override {
        check(probabilities, "probabilities");
        check(diff_logits, "diff_logits");
        check_labels(labels);
        const float* prob = probabilities.data<float>();
        const int* y = labels.data<int>();
        float* dx = diff_logits.data<float>();
        const std::int64_t n = config_.n, k = config_.classes;
        const float on_label = 1.f - smoothing, per_class = smoothing / static_cast<float>(k);
#pragma omp parallel for if (n * k > kParallelMin)
        for (std::int64_t i = 0; i < n; ++i) {
            for (std::int64_t j = 0; j < k; ++j) {
                const float target = per_class + (j == y[i] ? on_label : 0.f);
                dx[i * k + j] = scale * (prob[i * k + j] - target);
            }
        }
    }

private:
    void check(const Tensor& t, const char* what) const {
        TANDEM_CHECK_AS(ShapeError,
                        t.shape() == Shape({config_.n, config_.classes}) && t.dtype() == DType::f32)
            << "SoftmaxCrossEntropy: " << what << " " << t.description() << " does not fit a kernel"
            << " built for " << config_.n << "x" << config_.classes << " f32";
    }

    void check_labels(const Tensor& labels) const {
        TANDEM_CHECK_AS(ShapeError, labels.numel() == config_.n && labels.dtype() == DType::i32)
            << "SoftmaxCrossEntropy: labels " << labels.description() << " must be " << config_.n
            << " i32 values";
        const int* y = labels.data<int>();
        for (std::int64_t i = 0; i < config_.n; ++i)
            TANDEM_CHECK_AS(DataError, y[i] >= 0 && y[i] < config_.classes)
                << "label " << y[i] << " of sample " << i + 1 << " is outside [0, "
                << config_.classes << ")";
    }

    SoftmaxCrossEntropyConfig config_;
};

}  // namespace

std::unique_ptr<SoftmaxCrossEntropyKernel> make_softmax_cross_entropy_cpu(
    Device&, const SoftmaxCrossEntropyConfig& config) {
    return std::make_unique<SoftmaxCrossEntropyCpu>(config);
}

}  // namespace tandem::cpu

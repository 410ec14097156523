// Softmax and layer norm on the CPU: device/row_math.h's row functions, OpenMP across rows.
#include "device/cpu/kernels_cpu.h"
#include "device/row_math.h"

namespace tandem::cpu {
namespace {

class SoftmaxCpu final : public SoftmaxKernel {
public:
    explicit SoftmaxCpu(const SoftmaxConfig& c) : c_(c) {}

    void forward(const Tensor& src, Tensor& dst) override {
        const float* x = src.data<float>();
        float* y = dst.data<float>();
        const std::int64_t rows = c_.outer * c_.inner, run = c_.size * c_.inner;
#pragma omp parallel for if (rows * c_.size > kParallelMin)
        for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t at = (r / c_.inner) * run + r % c_.inner;
            row_math::softmax_forward(x + at, y + at, c_.size, c_.inner, c_.log);
        }
    }

    void backward(const Tensor& dst, const Tensor& diff_dst, Tensor& diff_src) override {
        const float* y = dst.data<float>();
        const float* dy = diff_dst.data<float>();
        float* dx = diff_src.data<float>();
        const std::int64_t rows = c_.outer * c_.inner, run = c_.size * c_.inner;
#pragma omp parallel for if (rows * c_.size > kParallelMin)
        for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t at = (r / c_.inner) * run + r % c_.inner;
            row_math::softmax_backward(y + at, dy + at, dx + at, c_.size, c_.inner, c_.log);
        }
    }

private:
    SoftmaxConfig c_;
};

class LayerNormCpu final : public LayerNormKernel {
public:
    explicit LayerNormCpu(const LayerNormConfig& c) : c_(c) {}

    void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& dst,
                 Tensor& mean, Tensor& rstd) override {
        const float* x = src.data<float>();
        float* y = dst.data<float>();
        const float* g = c_.affine ? gamma.data<float>() : nullptr;
        const float* b = c_.affine ? beta.data<float>() : nullptr;
        float* m = mean.data<float>();
        float* r = rstd.data<float>();
#pragma omp parallel for if (c_.rows * c_.cols > kParallelMin)
        for (std::int64_t row = 0; row < c_.rows; ++row)
            row_math::layer_norm_forward(x + row * c_.cols, y + row * c_.cols, g, b, c_.cols,
                                         c_.eps, m + row, r + row);
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                  const Tensor& mean, const Tensor& rstd, Tensor& diff_src, Tensor& diff_gamma,
                  Tensor& diff_beta) override {
        const float* x = src.data<float>();
        const float* dy = diff_dst.data<float>();
        const float* g = c_.affine ? gamma.data<float>() : nullptr;
        const float* m = mean.data<float>();
        const float* r = rstd.data<float>();
        float* dx = diff_src.data<float>();
#pragma omp parallel for if (c_.rows * c_.cols > kParallelMin)
        for (std::int64_t row = 0; row < c_.rows; ++row)
            row_math::layer_norm_backward(x + row * c_.cols, dy + row * c_.cols, g, c_.cols, m[row],
                                          r[row], dx + row * c_.cols);
        if (!c_.affine) return;
        float* dg = diff_gamma.data<float>();
        float* db = diff_beta.data<float>();
#pragma omp parallel for if (c_.rows * c_.cols > kParallelMin)
        for (std::int64_t col = 0; col < c_.cols; ++col)
            row_math::layer_norm_parameter_grads(x, dy, m, r, c_.rows, c_.cols, col, dg, db);
    }

private:
    LayerNormConfig c_;
};

}  // namespace

std::unique_ptr<SoftmaxKernel> make_softmax_cpu(Device&, const SoftmaxConfig& c) {
    return std::make_unique<SoftmaxCpu>(c);
}

std::unique_ptr<LayerNormKernel> make_layer_norm_cpu(Device&, const LayerNormConfig& c) {
    return std::make_unique<LayerNormCpu>(c);
}

}  // namespace tandem::cpu

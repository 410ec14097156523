// Batch normalisation, naive loops with double accumulation: the oracle for the oneDNN kernel.
// Elements are addressed through the tensors' strides, so both layouts take the same path.
#include <cmath>
#include <vector>

#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

class BatchNormReference final : public BatchNormKernel {
public:
    explicit BatchNormReference(const BatchNormConfig& config)
        : config_(config), per_channel_(std::size_t(config.n * config.h * config.w)) {}

    void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& mean,
                 Tensor& variance, Tensor& dst) override {
        const float* x = src.data<float>();
        float* y = dst.data<float>();
        float* mu = mean.data<float>();
        float* var = variance.data<float>();
        const auto xs = offsets(src), ys = offsets(dst);
        for (std::int64_t c = 0; c < config_.c; ++c) {
            const std::size_t begin = std::size_t(c) * per_channel_, end = begin + per_channel_;
            // The mean y is centred on: in training the batch's in double, not its float (a
            // channel whose mean is 10^5 of its spread lost 0.4% of y to that rounding).
            double m = mu[c];
            if (config_.training) {
                double sum = 0;
                for (std::size_t k = begin; k < end; ++k) sum += x[xs[k]];
                m = sum / double(per_channel_);
                double squares = 0;
                for (std::size_t k = begin; k < end; ++k)
                    squares += (x[xs[k]] - m) * (x[xs[k]] - m);
                mu[c] = float(m);
                var[c] = float(squares / double(per_channel_));  // biased, as the contract says
            }
            const double inv_std = 1.0 / std::sqrt(double(var[c]) + config_.epsilon);
            const double g = gamma.data<float>()[c], b = beta.data<float>()[c];
            for (std::size_t k = begin; k < end; ++k)
                y[ys[k]] = float(g * (x[xs[k]] - m) * inv_std + b);
        }
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                  const Tensor& mean, const Tensor& variance, Tensor& diff_src, Tensor& diff_gamma,
                  Tensor& diff_beta) override {
        const float* x = src.data<float>();
        const float* dy = diff_dst.data<float>();
        float* dx = diff_src.data<float>();
        const auto xs = offsets(src), dys = offsets(diff_dst), dxs = offsets(diff_src);
        for (std::int64_t c = 0; c < config_.c; ++c) {
            const std::size_t begin = std::size_t(c) * per_channel_, end = begin + per_channel_;
            const double m = mean.data<float>()[c];
            const double inv_std =
                1.0 / std::sqrt(double(variance.data<float>()[c]) + config_.epsilon);
            const double g = gamma.data<float>()[c];
            double sum_dy = 0, sum_dy_xhat = 0;
            for (std::size_t k = begin; k < end; ++k) {
                sum_dy += dy[dys[k]];
                sum_dy_xhat += dy[dys[k]] * (x[xs[k]] - m) * inv_std;
            }
            for (std::size_t k = begin; k < end; ++k) {
                const double xhat = (x[xs[k]] - m) * inv_std;
                // Training: the batch statistics move with x; evaluation: they are constants.
                const double dy_eff =
                    config_.training
                        ? dy[dys[k]] - (sum_dy + xhat * sum_dy_xhat) / double(per_channel_)
                        : dy[dys[k]];
                dx[dxs[k]] = float(g * inv_std * dy_eff);
            }
            diff_gamma.data<float>()[c] += float(sum_dy_xhat);
            diff_beta.data<float>()[c] += float(sum_dy);
        }
    }

private:
    // Storage offset of every element, grouped by channel, then in (n, h, w) order.
    std::vector<std::size_t> offsets(const Tensor& t) const {
        const auto s = t.strides();
        std::vector<std::size_t> out;
        out.reserve(per_channel_ * std::size_t(config_.c));
        for (std::int64_t c = 0; c < config_.c; ++c)
            for (std::int64_t n = 0; n < config_.n; ++n)
                for (std::int64_t h = 0; h < config_.h; ++h)
                    for (std::int64_t w = 0; w < config_.w; ++w)
                        out.push_back(std::size_t(n * s[0] + c * s[1] + h * s[2] + w * s[3]));
        return out;
    }

    BatchNormConfig config_;
    std::size_t per_channel_;
};

}  // namespace

std::unique_ptr<BatchNormKernel> make_batch_norm_reference(Device&, const BatchNormConfig& config) {
    return std::make_unique<BatchNormReference>(config);
}

}  // namespace tandem::cpu

// Local response normalisation across channels, naive loops in double: the oracle for the
// oneDNN kernel. PyTorch's LocalResponseNorm window: channels c - size/2 .. c + (size-1)/2,
// clipped to the tensor, with alpha always divided by `size`. No workspace: backward
// recomputes the scales from src.
#include <algorithm>
#include <cmath>
#include <vector>

#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

class LrnReference final : public LrnKernel {
public:
    explicit LrnReference(const LrnConfig& c) : c_(c) {}

    std::size_t workspace_bytes() const override { return 0; }

    void forward(const Tensor& src, Tensor& dst, Tensor&) override {
        const float* x = src.data<float>();
        float* y = dst.data<float>();
        const auto xs = src.strides(), ys = dst.strides();
        std::vector<double> scale(std::size_t(c_.c));
        for_each_pixel([&](std::int64_t n, std::int64_t h, std::int64_t w) {
            const float* xp = x + n * xs[0] + h * xs[2] + w * xs[3];
            float* yp = y + n * ys[0] + h * ys[2] + w * ys[3];
            scales(xp, xs[1], scale);
            for (std::int64_t c = 0; c < c_.c; ++c)
                yp[c * ys[1]] = float(xp[c * xs[1]] * std::pow(scale[std::size_t(c)], -c_.beta));
        });
    }

    // With s_i = k + alpha/size * sum_{j in W(i)} x_j^2 and y_i = x_i s_i^-beta:
    //   dx_j = dy_j s_j^-beta - 2 alpha beta / size * x_j * sum_{i : j in W(i)} dy_i x_i
    //   s_i^(-beta-1)
    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor&,
                  Tensor& diff_src) override {
        const float* x = src.data<float>();
        const float* dy = diff_dst.data<float>();
        float* dx = diff_src.data<float>();
        const auto xs = src.strides(), gs = diff_dst.strides(), ds = diff_src.strides();
        std::vector<double> scale(std::size_t(c_.c)), t(std::size_t(c_.c));
        const double factor = 2.0 * c_.alpha * c_.beta / double(c_.size);
        for_each_pixel([&](std::int64_t n, std::int64_t h, std::int64_t w) {
            const float* xp = x + n * xs[0] + h * xs[2] + w * xs[3];
            const float* gp = dy + n * gs[0] + h * gs[2] + w * gs[3];
            float* dp = dx + n * ds[0] + h * ds[2] + w * ds[3];
            scales(xp, xs[1], scale);
            for (std::int64_t i = 0; i < c_.c; ++i) {
                const double s = scale[std::size_t(i)];
                t[std::size_t(i)] = gp[i * gs[1]] * xp[i * xs[1]] * std::pow(s, -c_.beta - 1);
            }
            for (std::int64_t j = 0; j < c_.c; ++j) {
                // i's window holds j exactly when i lies in j - (size-1)/2 .. j + size/2.
                double sum = 0;
                const std::int64_t lo = std::max<std::int64_t>(j - (c_.size - 1) / 2, 0);
                const std::int64_t hi = std::min(j + c_.size / 2, c_.c - 1);
                for (std::int64_t i = lo; i <= hi; ++i) sum += t[std::size_t(i)];
                dp[j * ds[1]] = float(gp[j * gs[1]] * std::pow(scale[std::size_t(j)], -c_.beta) -
                                      factor * xp[j * xs[1]] * sum);
            }
        });
    }

private:
    template <class F>
    void for_each_pixel(F&& f) const {
        for (std::int64_t n = 0; n < c_.n; ++n)
            for (std::int64_t h = 0; h < c_.h; ++h)
                for (std::int64_t w = 0; w < c_.w; ++w) f(n, h, w);
    }

    // scale[c] = k + alpha / size * sum of x^2 over c's window; x steps by `stride` per channel.
    void scales(const float* x, std::int64_t stride, std::vector<double>& scale) const {
        for (std::int64_t c = 0; c < c_.c; ++c) {
            const std::int64_t lo = std::max<std::int64_t>(c - c_.size / 2, 0);
            const std::int64_t hi = std::min(c + (c_.size - 1) / 2, c_.c - 1);
            double sum = 0;
            for (std::int64_t j = lo; j <= hi; ++j) sum += double(x[j * stride]) * x[j * stride];
            scale[std::size_t(c)] = c_.k + c_.alpha / double(c_.size) * sum;
        }
    }

    LrnConfig c_;
};

}  // namespace

std::unique_ptr<LrnKernel> make_lrn_reference(Device&, const LrnConfig& config) {
    return std::make_unique<LrnReference>(config);
}

}  // namespace tandem::cpu

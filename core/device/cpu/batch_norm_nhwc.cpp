// Batch normalisation on channels-last float32 activations, our own loops: the CPU default in
// that layout, alone and with the ReLU after it (other layouts stay on oneDNN,
// batch_norm_dnnl.cpp). oneDNN 2.6's nhwc kernel took 0.91, 0.37 and 0.18 ms for one training
// forward of ResNet-20's 16-, 32- and 64-channel activations (batch 128, one Zen 5 core), 13%
// of the step with its backward; a loop over channel vectors (channel_vectors.h) down the
// pixels took a third of that (0.26, 0.11 and 0.06 ms).
//
// Each pixel's channels are one contiguous run, so every pass takes channel vectors pixel by
// pixel, the pixels split evenly among the device's threads:
//  - statistics (training forward): sums of x and x^2 per channel, in float over a block of 64
//    pixels, each taken about the block's first pixel (so that the squares do not cancel where
//    a channel's mean is far from zero), added into double totals per thread; the threads'
//    totals then in thread order, so a result depends only on the thread count;
//  - normalising: y = (x - mean) * a + b per channel, a = gamma / sqrt(variance + epsilon)
//    and b = beta - d * a, d the part of the double mean its float lost (a channel whose mean
//    is 10^5 of its spread then comes out as the reference's double arithmetic has it, where
//    x * a + (beta - mean * a) lost a percent to cancellation; x - mean is exact); max(0, y)
//    with the fused ReLU;
//  - backward: sums of dy and dy * x^ (x^ = (x - mean) / sqrt(variance + epsilon)) the same
//    way, then dx = a * (dy - (sum dy + x^ * sum dy x^) / count) in training, a * dy in
//    evaluation, where the statistics are constants.
// The fused ReLU keeps b as its workspace: backward recomputes y with the same code as
// forward, so it finds where the ReLU passed as forward did. Every element is a few vector
// operations each way (a backward that computed x - mean three times and x^ apart ran 10-25%
// behind oneDNN's on ResNet-20's 16-channel activations; this one runs level with it).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "device/cpu/channel_vectors.h"
#include "device/cpu/cpu_device.h"
#include "device/cpu/kernels_cpu.h"
#include "device/cpu/thread_blocks.h"

namespace tandem::cpu {
namespace {

using vec::kVec;
using vec::load;
using vec::store;
using vec::Vec;

constexpr std::int64_t kBlock = 64;  // pixels whose float sums go into the double totals

// Forward's output before the ReLU from x - mean (see the top).
inline Vec from_centred(const Vec& centred, const Vec& a, const Vec& b) {
    return centred * a + b;
}

inline Vec relu(const Vec& y) {
    const Vec zero{};
    return y > zero ? y : zero;
}

// Per channel, the two sums a pass needs: double totals over the pixels of every thread.
class ChannelSums {
public:
    ChannelSums(int threads, std::int64_t channels)
        : channels_(channels), totals_(static_cast<std::size_t>(threads * 2 * channels), 0.0) {}

    // This thread's totals: first[c], second[c] at [c], [channels + c].
    double* of_thread(int thread) {
        return totals_.data() + static_cast<std::size_t>(thread) * 2 * channels_;
    }

    // The threads' totals added in thread order into first[c] and second[c].
    void combine(int team, std::vector<double>& first, std::vector<double>& second) const {
        first.assign(static_cast<std::size_t>(channels_), 0.0);
        second.assign(static_cast<std::size_t>(channels_), 0.0);
        for (int t = 0; t < team; ++t)
            for (std::int64_t c = 0; c < channels_; ++c) {
                const std::size_t at = static_cast<std::size_t>(t * 2 * channels_ + c);
                first[static_cast<std::size_t>(c)] += totals_[at];
                second[static_cast<std::size_t>(c)] += totals_[at + channels_];
            }
    }

private:
    std::int64_t channels_;
    std::vector<double> totals_;
};

// A per-channel value as channel vectors, the lanes past the channels zero.
std::vector<Vec> as_vectors(const std::vector<float>& values) {
    std::vector<Vec> out((values.size() + kVec - 1) / kVec, Vec{});
    for (std::size_t c = 0; c < values.size(); ++c) out[c / kVec][c % kVec] = values[c];
    return out;
}

class BatchNormNhwc {
public:
    BatchNormNhwc(Device& device, const BatchNormConfig& config)
        : threads_(std::max(1, device.threads())), config_(config),
          pixels_(config.n * config.h * config.w), channels_(config.c) {}

    // Training: the batch's mean and biased variance into `mean` and `variance`. Then y (max(0,
    // y) with `fused_relu`), and b into `kept` when it is not null.
    void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& mean,
                 Tensor& variance, Tensor& dst, bool fused_relu, float* kept) const {
        const float* x = src.data<float>();
        std::vector<float> lost(static_cast<std::size_t>(channels_), 0.f);
        if (config_.training)
            batch_statistics(x, mean.data<float>(), variance.data<float>(), lost.data());
        const std::vector<float> a = scales(gamma, inverse_std(variance));
        const float* beta_p = beta.data<float>();
        std::vector<float> b(a.size());
        for (std::size_t c = 0; c < a.size(); ++c) b[c] = beta_p[c] - lost[c] * a[c];
        if (kept) std::copy(b.begin(), b.end(), kept);
        const std::vector<Vec> mv = per_channel(mean.data<float>()), av = as_vectors(a);
        const std::vector<Vec> bv = as_vectors(b);
        float* y = dst.data<float>();
        for_each_vector([&](std::int64_t at, int lanes, std::size_t j) {
            const Vec out = from_centred(load(x + at, lanes) - mv[j], av[j], bv[j]);
            store(y + at, fused_relu ? relu(out) : out, lanes);
        });
    }

    // Adds the gradients of gamma and beta into diff_gamma and diff_beta. With `kept` (the
    // fused ReLU's b), the gradient passes only where forward's y was above zero.
    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                  const Tensor& mean, const Tensor& variance, const float* kept, Tensor& diff_src,
                  Tensor& diff_gamma, Tensor& diff_beta) const {
        const float* x = src.data<float>();
        const float* dy = diff_dst.data<float>();
        const std::vector<float> rstd = inverse_std(variance), a = scales(gamma, rstd);
        const std::vector<Vec> mv = per_channel(mean.data<float>()), av = as_vectors(a);
        const std::vector<Vec> rv = as_vectors(rstd);
        std::vector<Vec> bv;  // the fused ReLU's
        if (kept) bv = per_channel(kept);
        // Both passes, with the fused ReLU's test compiled in or out.
        const auto passes = [&](auto fused) {
            // The gradient reaching the normalisation: dy, or 0 where the fused ReLU stopped it.
            const auto passed = [&](const Vec& g, const Vec& centred, std::size_t j) {
                if constexpr (!decltype(fused)::value) return g;
                const Vec zero{};
                return from_centred(centred, av[j], bv[j]) > zero ? g : zero;
            };
            // Sums of dy and dy * x^ per channel.
            std::vector<double> sum_dy, sum_dy_xhat;
            sum_blocks(
                [&](std::int64_t first, std::int64_t count, std::int64_t c, int lanes,
                    std::size_t j, double* own) {
                    Vec s{}, q{};
                    for (std::int64_t p = first; p < first + count; ++p) {
                        const Vec centred = load(x + p * channels_ + c, lanes) - mv[j];
                        const Vec g = passed(load(dy + p * channels_ + c, lanes), centred, j);
                        s += g;
                        q += g * (centred * rv[j]);
                    }
                    for (int l = 0; l < lanes; ++l) {
                        own[c + l] += s[l];
                        own[channels_ + c + l] += q[l];
                    }
                },
                sum_dy, sum_dy_xhat);
            float* dg = diff_gamma.data<float>();
            float* db = diff_beta.data<float>();
            // dx = a * g + k1 * (x - mean) + k0: in training the batch statistics' share of the
            // gradient, -a / count * (sum dy + x^ * sum dy x^), as a line in x - mean (as a line
            // in x its two terms cancel where the mean is large); in evaluation none.
            std::vector<float> k1(a.size(), 0.f), k0(a.size(), 0.f);
            const double count = static_cast<double>(pixels_);
            for (std::size_t c = 0; c < a.size(); ++c) {
                dg[c] += static_cast<float>(sum_dy_xhat[c]);
                db[c] += static_cast<float>(sum_dy[c]);
                if (!config_.training) continue;
                k1[c] = static_cast<float>(-double(a[c]) * sum_dy_xhat[c] * rstd[c] / count);
                k0[c] = static_cast<float>(-double(a[c]) * sum_dy[c] / count);
            }
            const std::vector<Vec> k1v = as_vectors(k1), k0v = as_vectors(k0);
            float* dx = diff_src.data<float>();
            for_each_vector([&](std::int64_t at, int lanes, std::size_t j) {
                const Vec centred = load(x + at, lanes) - mv[j];
                const Vec g = passed(load(dy + at, lanes), centred, j);
                store(dx + at, av[j] * g + (k1v[j] * centred + k0v[j]), lanes);
            });
        };
        if (kept)
            passes(std::true_type{});
        else
            passes(std::false_type{});
    }

private:
    // body(first channel, lanes, vector index) for each channel vector of a pixel.
    template <typename Body>
    void for_vectors(Body&& body) const {
        for (std::int64_t c = 0; c < channels_; c += kVec)
            body(c, static_cast<int>(std::min<std::int64_t>(kVec, channels_ - c)),
                 static_cast<std::size_t>(c / kVec));
    }

    // body(offset of the vector's first float, lanes, vector index) for every channel vector of
    // every pixel, the pixels in equal shares among the threads.
    template <typename Body>
    void for_each_vector(Body&& body) const {
#pragma omp parallel num_threads(threads_)
        own_share(pixels_, pixels_, [&](std::int64_t first, std::int64_t count) {
            for (std::int64_t p = first; p < first + count; ++p)
                for_vectors([&](std::int64_t c, int lanes, std::size_t j) {
                    body(p * channels_ + c, lanes, j);
                });
        });
    }

    // Two sums per channel over every pixel: block(first pixel, count, first channel, lanes,
    // vector index, own) adds one channel vector's two sums over a block of at most kBlock
    // pixels into this thread's totals (own[c], own[channels + c]); then the threads' totals,
    // in thread order, into `first` and `second`.
    template <typename Block>
    void sum_blocks(Block&& block, std::vector<double>& first, std::vector<double>& second) const {
        ChannelSums sums(threads_, channels_);
        int team = 1;
#pragma omp parallel num_threads(threads_)
        {
            if (omp_get_thread_num() == 0) team = omp_get_num_threads();
            double* own = sums.of_thread(omp_get_thread_num());
            own_share(pixels_, kBlock, [&](std::int64_t from, std::int64_t count) {
                for_vectors([&](std::int64_t c, int lanes, std::size_t j) {
                    block(from, count, c, lanes, j, own);
                });
            });
        }
        sums.combine(team, first, second);
    }

    // c floats from `values` as channel vectors.
    std::vector<Vec> per_channel(const float* values) const {
        return as_vectors(std::vector<float>(values, values + channels_));
    }

    // 1 / sqrt(variance + epsilon), per channel.
    std::vector<float> inverse_std(const Tensor& variance) const {
        const float* v = variance.data<float>();
        std::vector<float> r(static_cast<std::size_t>(channels_));
        for (std::size_t c = 0; c < r.size(); ++c) r[c] = 1.f / std::sqrt(v[c] + config_.epsilon);
        return r;
    }

    // a = gamma / sqrt(variance + epsilon), per channel: forward and backward compute it alike,
    // so backward's test of the fused ReLU sees forward's values.
    std::vector<float> scales(const Tensor& gamma, const std::vector<float>& rstd) const {
        const float* g = gamma.data<float>();
        std::vector<float> a(rstd.size());
        for (std::size_t c = 0; c < a.size(); ++c) a[c] = g[c] * rstd[c];
        return a;
    }

    // The batch's mean and biased variance per channel, and what the mean lost to float.
    void batch_statistics(const float* x, float* mean, float* variance, float* lost) const {
        std::vector<double> sum, sum_squares;
        sum_blocks(
            [&](std::int64_t first, std::int64_t count, std::int64_t c, int lanes, std::size_t,
                double* own) {
                const Vec shift = load(x + first * channels_ + c, lanes);
                Vec s{}, q{};
                for (std::int64_t p = first; p < first + count; ++p) {
                    const Vec d = load(x + p * channels_ + c, lanes) - shift;
                    s += d;
                    q += d * d;
                }
                // sum x = sum d + count shift; sum x^2 = sum d^2 + 2 shift sum d + count shift^2.
                for (int l = 0; l < lanes; ++l) {
                    const double h = shift[l], n = static_cast<double>(count);
                    own[c + l] += s[l] + n * h;
                    own[channels_ + c + l] += q[l] + 2 * h * s[l] + n * h * h;
                }
            },
            sum, sum_squares);
        const double count = static_cast<double>(pixels_);
        for (std::int64_t c = 0; c < channels_; ++c) {
            const double mu = sum[static_cast<std::size_t>(c)] / count;
            mean[c] = static_cast<float>(mu);
            lost[c] = static_cast<float>(mu - double(mean[c]));
            variance[c] = static_cast<float>(
                std::max(0.0, sum_squares[static_cast<std::size_t>(c)] / count - mu * mu));
        }
    }

    int threads_;
    BatchNormConfig config_;
    std::int64_t pixels_, channels_;
};

class BatchNormCpu final : public BatchNormKernel {
public:
    BatchNormCpu(Device& device, const BatchNormConfig& config) : bn_(device, config) {}

    void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& mean,
                 Tensor& variance, Tensor& dst) override {
        bn_.forward(src, gamma, beta, mean, variance, dst, false, nullptr);
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                  const Tensor& mean, const Tensor& variance, Tensor& diff_src, Tensor& diff_gamma,
                  Tensor& diff_beta) override {
        bn_.backward(src, diff_dst, gamma, mean, variance, nullptr, diff_src, diff_gamma,
                     diff_beta);
    }

private:
    BatchNormNhwc bn_;
};

class BatchNormReluCpu final : public BatchNormReluKernel {
public:
    BatchNormReluCpu(Device& device, const BatchNormConfig& config)
        : bn_(device, config), channels_(config.c) {
        TANDEM_CHECK(config.training) << "BatchNorm2d+ReLU is fused for training only";
    }

    // b, c floats.
    std::size_t workspace_bytes() const override {
        return static_cast<std::size_t>(channels_) * sizeof(float);
    }

    void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& mean,
                 Tensor& variance, Tensor& dst, Tensor& workspace) override {
        bn_.forward(src, gamma, beta, mean, variance, dst, true, kept(workspace));
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                  const Tensor& mean, const Tensor& variance, const Tensor& workspace,
                  Tensor& diff_src, Tensor& diff_gamma, Tensor& diff_beta) override {
        bn_.backward(src, diff_dst, gamma, mean, variance, kept(workspace), diff_src, diff_gamma,
                     diff_beta);
    }

private:
    // The workspace as b.
    static float* kept(const Tensor& workspace) {
        return reinterpret_cast<float*>(workspace.data<std::uint8_t>());
    }

    BatchNormNhwc bn_;
    std::int64_t channels_;
};

}  // namespace

std::unique_ptr<BatchNormKernel> make_batch_norm_cpu(Device& device,
                                                     const BatchNormConfig& config) {
    if (config.layout != Layout::channels_last) return make_batch_norm_dnnl(device, config);
    return std::make_unique<BatchNormCpu>(device, config);
}

std::unique_ptr<BatchNormReluKernel> make_batch_norm_relu_cpu(Device& device,
                                                              const BatchNormConfig& config) {
    if (config.layout != Layout::channels_last) return make_batch_norm_relu_dnnl(device, config);
    return std::make_unique<BatchNormReluCpu>(device, config);
}

}  // namespace tandem::cpu

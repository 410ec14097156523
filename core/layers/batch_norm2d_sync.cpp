// Synchronised batch norm: statistics over every micro-batch of every replica.
//
// Forward: the global mean, then the global biased variance as the mean of (x - mean)^2 (two
// reductions: no cancellation from E[x^2] - mean^2), each summed over the replicas through
// pass.sum_over_replicas; every micro-batch is then normalised with them by the evaluation
// kernel (the same formula), and the running statistics take them once.
// Backward, with xhat = (x - mean) / sigma and sums over the global batch of n values:
//   dx = gamma / sigma * (dy - sum(dy) / n - xhat * sum(dy * xhat) / n)
//   dgamma += local sum(dy * xhat),  dbeta += local sum(dy)   (the gradient all-reduce adds
//   the other replicas' parts)
#include <cmath>

#include "layers/batch_norm2d.h"

namespace tandem {
namespace {

bool synchronised(const std::vector<Pass*>& passes) {
    return !passes.empty() && passes.front()->mode == Mode::train && passes.front()->sum_over_replicas;
}

// Calls f(element index, channel) over a host tensor N x C x H x W in its storage order.
template <class F>
void for_each_element(const Tensor& t, F&& f) {
    const Shape& s = t.shape();
    const std::int64_t n = t.numel(), c_dim = s[1], plane = s[2] * s[3];
    if (t.layout() == Layout::channels_last) {
        for (std::int64_t i = 0; i < n; ++i) f(i, i % c_dim);
    } else {
        for (std::int64_t i = 0; i < n; ++i) f(i, (i / plane) % c_dim);
    }
}

}  // namespace

std::vector<Tensor> BatchNorm2d::forward_many(const std::vector<Tensor>& xs, const std::vector<Pass*>& passes) {
    if (!synchronised(passes)) return Layer::forward_many(xs, passes);
    const auto channels = static_cast<std::size_t>(options_.channels);
    std::vector<double> sums(channels + 1, 0.0);  // per channel, then the value count
    for (const Tensor& x : xs) {
        output_shape(x.shape());
        const float* v = x.data<float>();
        for_each_element(x, [&](std::int64_t i, std::int64_t c) { sums[std::size_t(c)] += v[i]; });
        sums[channels] += double(x.numel()) / double(channels);
    }
    passes.front()->sum_over_replicas(sums);
    const double count = sums[channels];
    TANDEM_CHECK_AS(ShapeError, count > 1)
        << label() << ": expected more than 1 value per channel over the global batch, got " << count;
    std::vector<double> mean(channels), squares(channels, 0.0);
    for (std::size_t c = 0; c < channels; ++c) mean[c] = sums[c] / count;
    for (const Tensor& x : xs) {
        const float* v = x.data<float>();
        for_each_element(x, [&](std::int64_t i, std::int64_t c) {
            const double d = v[i] - mean[std::size_t(c)];
            squares[std::size_t(c)] += d * d;
        });
    }
    passes.front()->sum_over_replicas(squares);
    std::vector<float> mean_f(channels), var_f(channels);
    for (std::size_t c = 0; c < channels; ++c) mean_f[c] = float(mean[c]), var_f[c] = float(squares[c] / count);

    Device& device = passes.front()->device;
    const Shape c_shape{options_.channels};
    Tensor mean_t = Tensor::from_vector(c_shape, device, mean_f), var_t = Tensor::from_vector(c_shape, device, var_f);
    std::vector<Tensor> ys;
    for (std::size_t m = 0; m < xs.size(); ++m) {
        const Tensor& x = xs[m];
        Tensor y = Tensor::empty(x.shape(), device, DType::f32, x.layout());
        kernel(device, x.shape(), x.layout(), false)
            .forward(x, weight_.value, bias_.value, mean_t, var_t, y);
        passes[m]->saved.put(this, {mean_t, var_t});
        ys.push_back(std::move(y));
    }
    if (!passes.front()->recomputing) update_running_stats(mean_t, var_t, static_cast<std::int64_t>(count));
    return ys;
}

std::vector<Tensor> BatchNorm2d::backward_many(const std::vector<Tensor>& xs, const std::vector<Tensor>& dys_in,
                                               const std::vector<Pass*>& passes) {
    if (!synchronised(passes)) return Layer::backward_many(xs, dys_in, passes);
    const auto channels = static_cast<std::size_t>(options_.channels);
    const std::vector<float> mean = passes.front()->saved.get(this)[0].to_vector();
    const std::vector<float> var = passes.front()->saved.get(this)[1].to_vector();
    const std::vector<float> gamma = weight_.value.to_vector();
    std::vector<double> inv_sigma(channels);
    for (std::size_t c = 0; c < channels; ++c) inv_sigma[c] = 1.0 / std::sqrt(double(var[c]) + options_.epsilon);

    std::vector<Tensor> dys;
    // Per channel: sum(dy), then sum(dy * xhat), then the value count.
    std::vector<double> sums(2 * channels + 1, 0.0);
    for (std::size_t m = 0; m < xs.size(); ++m) {
        dys.push_back(dys_in[m].to_layout(xs[m].layout()));
        const float* x = xs[m].data<float>();
        const float* dy = dys.back().data<float>();
        for_each_element(xs[m], [&](std::int64_t i, std::int64_t c) {
            const auto k = std::size_t(c);
            sums[k] += dy[i];
            sums[channels + k] += dy[i] * (x[i] - mean[k]) * inv_sigma[k];
        });
        sums[2 * channels] += double(xs[m].numel()) / double(channels);
    }
    // This replica's parameter gradients, before the sums become global.
    std::vector<float> dgamma(channels), dbeta(channels);
    for (std::size_t c = 0; c < channels; ++c) dbeta[c] = float(sums[c]), dgamma[c] = float(sums[channels + c]);
    Device& device = passes.front()->device;
    auto& ops = tensor_ops(device);
    ops.accumulate(weight_.grad, Tensor::from_vector(weight_.grad.shape(), device, dgamma));
    ops.accumulate(bias_.grad, Tensor::from_vector(bias_.grad.shape(), device, dbeta));

    passes.front()->sum_over_replicas(sums);
    const double count = sums[2 * channels];
    std::vector<Tensor> dxs;
    for (std::size_t m = 0; m < xs.size(); ++m) {
        Tensor dx = Tensor::empty(xs[m].shape(), device, DType::f32, xs[m].layout());
        const float* x = xs[m].data<float>();
        const float* dy = dys[m].data<float>();
        float* out = dx.data<float>();
        for_each_element(xs[m], [&](std::int64_t i, std::int64_t c) {
            const auto k = std::size_t(c);
            const double xhat = (x[i] - mean[k]) * inv_sigma[k];
            out[i] = float(gamma[k] * inv_sigma[k] * (dy[i] - sums[k] / count - xhat * sums[channels + k] / count));
        });
        dxs.push_back(std::move(dx));
    }
    return dxs;
}

}  // namespace tandem

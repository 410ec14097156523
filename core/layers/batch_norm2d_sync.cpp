// Synchronised batch norm: statistics over every micro-batch of every replica.
//
// Built from the layer's own kernels, so it runs wherever they do (CPU devices and GPUs);
// only C-sized sums cross to the host and between replicas (pass.sum_over_replicas).
//
// Forward: each micro-batch's mean m_i and biased variance v_i over its n_i values per channel
// (the training kernel; its normalised output is dropped). Over the global batch of n values:
//   mean = sum(n_i m_i) / n,   var = sum(n_i (v_i + (m_i - mean)^2)) / n
// (two reductions: the pooled variance has no E[x^2] - mean^2 cancellation). Every micro-batch
// is then normalised with them by the evaluation kernel, and the running statistics take them
// once.
// Backward, with xhat = (x - mean) / sigma and S1 = sum(dy), S2 = sum(dy * xhat) over the
// global batch:
//   dx = gamma / sigma * dy  -  gamma / sigma * (S1 / n + xhat * S2 / n)
// The evaluation kernel's backward (constant statistics) gives the first term and, per
// replica, the local S1 and S2 (dbeta and dgamma: the gradient all-reduce adds the other
// replicas' parts). The second term is affine in x per channel, a x + b: exactly what the
// evaluation kernel's forward computes with gamma' = a, beta' = b, mean 0 and
// variance 1 - epsilon (so that sqrt(variance + epsilon) = 1).
#include <cmath>

#include "kernels/kernels.h"
#include "layers/batch_norm2d.h"

namespace tandem {
namespace {

bool synchronised(const std::vector<Pass*>& passes) {
    return !passes.empty() && passes.front()->mode == Mode::train &&
           passes.front()->sum_over_replicas;
}

std::vector<float> to_floats(const std::vector<double>& values) {
    return std::vector<float>(values.begin(), values.end());
}

}  // namespace

std::vector<Tensor> BatchNorm2d::forward_many(const std::vector<Tensor>& xs,
                                              const std::vector<Pass*>& passes) {
    if (!synchronised(passes)) return Layer::forward_many(xs, passes);
    Device& device = passes.front()->device;
    const auto channels = static_cast<std::size_t>(options_.channels);
    const Shape c_shape{options_.channels};
    struct Part {
        double count;
        std::vector<float> mean, var;
    };
    std::vector<Part> parts;
    std::vector<double> sums(channels + 1, 0.0);  // per channel sum(n_i m_i), then n
    for (const Tensor& x : xs) {
        const Shape s = output_shape(x.shape());
        Tensor mean = Tensor::empty(c_shape, device), var = Tensor::empty(c_shape, device);
        Tensor dropped = Tensor::empty(s, device, DType::f32, x.layout());
        kernel(device, s, x.layout(), true)
            .forward(x, weight_.value, bias_.value, mean, var, dropped);
        parts.push_back({double(s[0] * s[2] * s[3]), mean.to_vector(), var.to_vector()});
        for (std::size_t c = 0; c < channels; ++c)
            sums[c] += parts.back().count * parts.back().mean[c];
        sums[channels] += parts.back().count;
    }
    passes.front()->sum_over_replicas(sums);
    const double count = sums[channels];
    TANDEM_CHECK_AS(ShapeError, count > 1)
        << label() << ": expected more than 1 value per channel over the global batch, got "
        << count;
    std::vector<double> mean(channels), squares(channels, 0.0);
    for (std::size_t c = 0; c < channels; ++c) mean[c] = sums[c] / count;
    for (const Part& p : parts)
        for (std::size_t c = 0; c < channels; ++c) {
            const double d = p.mean[c] - mean[c];
            squares[c] += p.count * (p.var[c] + d * d);
        }
    passes.front()->sum_over_replicas(squares);
    for (double& s : squares) s /= count;

    Tensor mean_t = Tensor::from_vector(c_shape, device, to_floats(mean));
    Tensor var_t = Tensor::from_vector(c_shape, device, to_floats(squares));
    std::vector<Tensor> ys;
    for (std::size_t m = 0; m < xs.size(); ++m) {
        const Tensor& x = xs[m];
        Tensor y = Tensor::empty(x.shape(), device, DType::f32, x.layout());
        kernel(device, x.shape(), x.layout(), false)
            .forward(x, weight_.value, bias_.value, mean_t, var_t, y);
        passes[m]->saved.put(this, {mean_t, var_t});
        ys.push_back(std::move(y));
    }
    if (!passes.front()->recomputing)
        update_running_stats(mean_t, var_t, static_cast<std::int64_t>(count));
    return ys;
}

std::vector<Tensor> BatchNorm2d::backward_many(const std::vector<Tensor>& xs,
                                               const std::vector<Tensor>& dys_in,
                                               const std::vector<Pass*>& passes) {
    if (!synchronised(passes)) return Layer::backward_many(xs, dys_in, passes);
    Device& device = passes.front()->device;
    const auto channels = static_cast<std::size_t>(options_.channels);
    const Shape c_shape{options_.channels};
    Tensor mean_t = passes.front()->saved.get(this)[0];
    Tensor var_t = passes.front()->saved.get(this)[1];

    // First term, and this replica's S1 (dbeta) and S2 (dgamma).
    Tensor local_dgamma = Tensor::zeros(c_shape, device),
           local_dbeta = Tensor::zeros(c_shape, device);
    std::vector<Tensor> dxs;
    double local_count = 0;
    for (std::size_t m = 0; m < xs.size(); ++m) {
        const Tensor& x = xs[m];
        const Tensor dy = dys_in[m].to_layout(x.layout());
        Tensor dx = Tensor::empty(x.shape(), device, DType::f32, x.layout());
        kernel(device, x.shape(), x.layout(), false)
            .backward(x, dy, weight_.value, mean_t, var_t, dx, local_dgamma, local_dbeta);
        dxs.push_back(std::move(dx));
        local_count += double(x.shape()[0] * x.shape()[2] * x.shape()[3]);
    }
    auto& ops = tensor_ops(device);
    ops.accumulate(weight_.grad, local_dgamma);
    ops.accumulate(bias_.grad, local_dbeta);

    // Per channel S1, then S2, then the value count, over every replica.
    std::vector<double> sums(2 * channels + 1, 0.0);
    const std::vector<float> s1 = local_dbeta.to_vector(), s2 = local_dgamma.to_vector();
    for (std::size_t c = 0; c < channels; ++c) sums[c] = s1[c], sums[channels + c] = s2[c];
    sums[2 * channels] = local_count;
    passes.front()->sum_over_replicas(sums);
    const double count = sums[2 * channels];

    // Second term: a x + b per channel, through the evaluation kernel's forward.
    const std::vector<float> mean = mean_t.to_vector(), var = var_t.to_vector(),
                             gamma = weight_.value.to_vector();
    std::vector<float> a(channels), b(channels);
    for (std::size_t c = 0; c < channels; ++c) {
        const double inv_sigma = 1.0 / std::sqrt(double(var[c]) + options_.epsilon);
        const double slope = -gamma[c] * inv_sigma * inv_sigma * sums[channels + c] / count;
        a[c] = float(slope);
        b[c] = float(-gamma[c] * inv_sigma * sums[c] / count - slope * mean[c]);
    }
    Tensor a_t = Tensor::from_vector(c_shape, device, a),
           b_t = Tensor::from_vector(c_shape, device, b);
    Tensor zero = Tensor::zeros(c_shape, device);
    Tensor unit =
        Tensor::from_vector(c_shape, device, std::vector<float>(channels, 1.f - options_.epsilon));
    for (std::size_t m = 0; m < xs.size(); ++m) {
        Tensor correction = Tensor::empty(xs[m].shape(), device, DType::f32, xs[m].layout());
        kernel(device, xs[m].shape(), xs[m].layout(), false)
            .forward(xs[m], a_t, b_t, zero, unit, correction);
        ops.accumulate(dxs[m], correction);
    }
    return dxs;
}

}  // namespace tandem

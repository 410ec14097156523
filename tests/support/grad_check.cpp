#include "support/grad_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/rng.h"
#include "device/cpu/cpu_device.h"
#include "kernels/kernel_cache.h"

namespace tandem::test {

Device& test_device() {
    static CpuDevice device(0, CpuDeviceOptions{std::size_t(2) << 30, 2});
    return device;
}

Tensor random_tensor(const Shape& shape, Device& device, std::uint64_t seed, float lo, float hi,
                     Layout layout) {
    std::vector<float> values(static_cast<std::size_t>(shape.numel()));
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = lo + (hi - lo) * rng_uniform(seed, i);
    return Tensor::from_vector(shape, device, values, layout);
}

namespace {

double dot(const std::vector<float>& a, const std::vector<float>& b) {
    double total = 0;
    for (std::size_t i = 0; i < a.size(); ++i) total += double(a[i]) * double(b[i]);
    return total;
}

// The indices to check: all of them, or a seeded random subset.
std::vector<std::size_t> pick(std::size_t n, int max_elements, std::uint64_t seed) {
    std::vector<std::size_t> idx(n);
    for (std::size_t i = 0; i < n; ++i) idx[i] = i;
    if (n <= static_cast<std::size_t>(max_elements)) return idx;
    for (std::size_t i = 0; i < static_cast<std::size_t>(max_elements); ++i) {
        std::size_t j = i + rng_bits(seed, i) % (n - i);
        std::swap(idx[i], idx[j]);
    }
    idx.resize(static_cast<std::size_t>(max_elements));
    return idx;
}

}  // namespace

void check_gradients(Layer& layer, const Tensor& x0, Device& device, const GradCheckOptions& o) {
    const std::uint64_t key = rng_key(o.seed, 77);
    auto loss_of = [&](const Tensor& x, const std::vector<float>& r) {
        Tape tape;
        Pass pass{device, o.mode, 0, tape, key};
        return dot(layer.forward(x, pass).to_vector(), r);
    };

    layer.to(device);
    const Shape y_shape = layer.output_shape(x0.shape());
    Tensor r_tensor = random_tensor(y_shape, device, rng_key(o.seed, 1), -1.f, 1.f,
                                    y_shape.rank() == 4 ? o.layout : Layout::contiguous);
    const std::vector<float> r = r_tensor.to_vector();

    auto params = named_parameters(layer);
    for (auto& p : params) p.parameter->grad.fill(0.f);

    Tape tape;
    Pass pass{device, o.mode, 0, tape, key};
    Tensor y = layer.forward(x0, pass);
    ASSERT_EQ(y.shape(), y_shape) << layer.label() << ": forward shape differs from output_shape";
    Tensor dx = layer.backward(x0, r_tensor, pass);
    ASSERT_EQ(dx.shape(), x0.shape()) << layer.label() << ": dx shape differs from x";

    auto compare = [&](const std::string& what, std::size_t index, double numeric, double analytic,
                       double plus, double minus) {
        const double scale = std::max({std::fabs(numeric), std::fabs(analytic), 1.0});
        EXPECT_LE(std::fabs(numeric - analytic), o.tolerance * scale)
            << layer.label() << " input " << x0.shape().to_string() << ": d L / d " << what << "["
            << index << "]: numeric " << numeric << ", analytic " << analytic << " (L+ " << plus
            << ", L- " << minus << ")";
    };

    // Input gradient.
    const std::vector<float> dx_values = dx.to_vector();
    std::vector<float> xv = x0.to_vector();
    for (std::size_t i : pick(xv.size(), o.max_elements, rng_key(o.seed, 2))) {
        const float saved = xv[i];
        xv[i] = saved + o.eps;
        const double plus = loss_of(Tensor::from_vector(x0.shape(), device, xv, x0.layout()), r);
        xv[i] = saved - o.eps;
        const double minus = loss_of(Tensor::from_vector(x0.shape(), device, xv, x0.layout()), r);
        xv[i] = saved;
        compare("x", i, (plus - minus) / (2.0 * o.eps), dx_values[i], plus, minus);
    }

    // Parameter gradients.
    std::vector<std::vector<float>> grads;
    for (auto& p : params) grads.push_back(p.parameter->grad.to_vector());
    for (std::size_t k = 0; k < params.size(); ++k) {
        Tensor& value = params[k].parameter->value;
        std::vector<float> v = value.to_vector();
        for (std::size_t i : pick(v.size(), o.max_elements, rng_key(o.seed, 3 + k))) {
            const float saved = v[i];
            v[i] = saved + o.eps;
            value.copy_from(v);
            const double plus = loss_of(x0, r);
            v[i] = saved - o.eps;
            value.copy_from(v);
            const double minus = loss_of(x0, r);
            v[i] = saved;
            value.copy_from(v);
            compare(params[k].name, i, (plus - minus) / (2.0 * o.eps), grads[k][i], plus, minus);
        }
    }

    // Accumulation: a second backward adds the same gradient again.
    if (o.check_accumulation && !params.empty()) {
        Tape tape2;
        Pass pass2{device, o.mode, 0, tape2, key};
        layer.forward(x0, pass2);
        layer.backward(x0, r_tensor, pass2);
        for (std::size_t k = 0; k < params.size(); ++k) {
            const auto twice = params[k].parameter->grad.to_vector();
            for (std::size_t i = 0; i < twice.size(); ++i) {
                const double expect = 2.0 * grads[k][i];
                ASSERT_NEAR(twice[i], expect, 1e-4 * std::max(1.0, std::fabs(expect)))
                    << layer.label() << ": backward must add into " << params[k].name << "'s grad ["
                    << i << "]";
            }
        }
    }
}

}  // namespace tandem::test

// Helpers of the GPU parity tests: the same kernel kind built on the CPU test device and on
// cuda:0, inputs made on the host and copied over, results compared in logical order.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "kernels/kernel_cache.h"
#include "kernels/kernels.h"
#include "kernels/registry.h"
#include "layers/merge.h"
#include "support/cuda_test.h"
#include "support/grad_check.h"

namespace tandem::test {

inline Device& cpu() {
    return test_device();
}
inline Device& gpu() {
    return cuda_test_device(0);
}

template <class K>
std::unique_ptr<K> kernel_on(Device& device, const typename K::Config& config) {
    return KernelRegistry::instance().make<K>(device, config);
}

// |got - want| <= tol * max(1, |want|) for every element; reports the worst one.
inline void expect_near(const Tensor& got, const Tensor& want, double tol,
                        const std::string& what) {
    const auto g = got.to_vector(), w = want.to_vector();
    ASSERT_EQ(g.size(), w.size()) << what;
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
        const double err = std::fabs(double(g[i]) - w[i]) / std::max(1.0, std::fabs(double(w[i])));
        if (!(err <= worst)) {  // NaN counts as the worst
            worst = err;
            at = i;
        }
    }
    EXPECT_LE(worst, tol) << what << ": element " << at << " is " << g[at] << " on "
                          << got.device().name() << ", " << w[at] << " on " << want.device().name();
}

// What one forward and backward of a layer gave, on the host: the output, each input's gradient,
// each parameter's gradient, and what `observe` read off the layer after forward (the attention
// weights, say).
struct LayerResults {
    Tensor y, observed;
    std::vector<Tensor> dxs;
    std::map<std::string, Tensor> grads;
};
using Observe = std::function<Tensor(const Layer&)>;

// One forward and backward of `layer` moved to `device`, from host inputs. Several inputs go
// through Merge's merge/unmerge, one through forward/backward.
inline LayerResults run_layer_on(Layer& layer, Device& device, const std::vector<Tensor>& xs,
                                 const Tensor& dy, const Observe& observe = {}) {
    for (Parameter* p : layer.parameters())
        p->grad = Tensor::zeros(p->value.shape(), host_device());
    // A merge has no one-input shape to bind with: its kernels are made on first use.
    if (xs.size() > 1)
        layer.to(device);
    else
        layer.bind(device, xs[0].shape(), xs[0].layout());
    std::vector<Tensor> on;
    for (const Tensor& x : xs) on.push_back(x.to(device));
    Tape tape;
    Pass pass{device, Mode::train, 0, tape, 0};
    LayerResults r;
    auto* merge = xs.size() > 1 ? &dynamic_cast<Merge&>(layer) : nullptr;
    r.y = (merge ? merge->merge(on, pass) : layer.forward(on[0], pass)).to(host_device());
    if (observe) r.observed = observe(layer).to(host_device());
    if (merge)
        for (const Tensor& dx : merge->unmerge(on, dy.to(device), pass))
            r.dxs.push_back(dx.to(host_device()));
    else
        r.dxs.push_back(layer.backward(on[0], dy.to(device), pass).to(host_device()));
    for (Parameter* p : layer.parameters()) r.grads[p->name] = p->grad.to(host_device());
    EXPECT_TRUE(tape.empty()) << layer.label() << " left saved tensors on " << device.name();
    return r;
}

// `layer` (initialised) on the CPU and a clone of it on the GPU give the same results within
// `tolerance`; dy is drawn from `seed` in the output's shape and layout.
inline void expect_same_on_gpu(const LayerPtr& layer, const std::vector<Tensor>& xs,
                               std::uint64_t seed, const Observe& observe = {},
                               double tolerance = 1e-4) {
    SCOPED_TRACE(layer->label() + " " + layer->options_text());
    LayerPtr copy = layer->clone();
    std::vector<Shape> shapes;
    for (const Tensor& x : xs) shapes.push_back(x.shape());
    const Shape out = xs.size() > 1 ? dynamic_cast<Merge&>(*layer).merged_shape(shapes)
                                    : layer->output_shape(xs[0].shape());
    const Tensor dy = random_tensor(out, cpu(), seed, -1.f, 1.f,
                                    out.rank() == 4 ? xs[0].layout() : Layout::contiguous);
    const LayerResults want = run_layer_on(*layer, cpu(), xs, dy, observe);
    const LayerResults got = run_layer_on(*copy, gpu(), xs, dy, observe);
    expect_near(got.y, want.y, tolerance, "output");
    if (observe)
        expect_near(got.observed, want.observed, tolerance, "what the layer keeps after forward");
    ASSERT_EQ(got.dxs.size(), want.dxs.size());
    for (std::size_t i = 0; i < want.dxs.size(); ++i)
        if (want.dxs[i].defined())
            expect_near(got.dxs[i], want.dxs[i], tolerance,
                        "input gradient " + std::to_string(i + 1));
    for (const auto& [name, grad] : want.grads)
        expect_near(got.grads.at(name), grad, tolerance, "gradient of " + name);
}

// A device owned elsewhere (the shared test devices, see support/cuda_test.h) as an engine takes
// it.
inline std::shared_ptr<Device> unowned(Device& d) {
    return std::shared_ptr<Device>(&d, [](Device*) {});
}

using Weights = std::map<std::string, std::vector<float>>;

// The trained values of `net` by name, on the host; its buffers too when asked.
inline Weights weights_of(Layer& net, bool buffers = false) {
    Weights w;
    for (auto& p : named_parameters(net)) w[p.name] = p.parameter->value.to_vector();
    if (buffers)
        for (auto& b : named_buffers(net)) w[b.name] = b.parameter->value.to_vector();
    return w;
}

// Training on a GPU and on the CPU sums in other orders: the same weights within 1e-3 relative.
inline void expect_same_weights(const Weights& got, const Weights& want) {
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, values] : want) {
        const auto& g = got.at(name);
        ASSERT_EQ(g.size(), values.size()) << name;
        for (std::size_t i = 0; i < g.size(); ++i)
            ASSERT_NEAR(g[i], values[i], 1e-3 * std::max(1.f, std::fabs(values[i])))
                << name << " [" << i << "]";
    }
}

}  // namespace tandem::test

// Finite-difference gradient checks for layers (Caffe's GradientChecker, in our terms).
//
// L = <layer(x), r> with a fixed random r, so dL/dy = r. Every checked element of x and of
// each parameter is perturbed by +-eps (central differences, L accumulated in double) and the
// result compared with backward's, relative tolerance |num - ana| <= tol * max(|num|, |ana|, 1).
// Forward draws from the same rng key every time, so dropout masks repeat. Failures print the
// layer, the tensor, the flat index, both values and L+/L-.
#pragma once

#include <cstdint>

#include "layers/layer.h"

namespace tandem::test {

struct GradCheckOptions {
    float eps = 1e-2f;
    float tolerance = 1e-2f;
    Mode mode = Mode::train;
    Layout layout = Layout::contiguous;
    std::uint64_t seed = 1;
    // At most this many elements per tensor (a random subset for bigger tensors).
    int max_elements = 150;
    // Also check that two backward calls give twice the parameter gradient.
    bool check_accumulation = true;
};

// Runs the check with gtest assertions; `x` is on `device`.
void check_gradients(Layer& layer, const Tensor& x, Device& device,
                     const GradCheckOptions& options = {});

// A tensor of uniform values in [lo, hi) drawn from `seed`.
Tensor random_tensor(const Shape& shape, Device& device, std::uint64_t seed, float lo = -1.f,
                     float hi = 1.f, Layout layout = Layout::contiguous);

// A CPU device for tests, created once (threads: 2, memory: 2 GiB).
Device& test_device();

}  // namespace tandem::test

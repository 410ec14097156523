// Helpers of the GPU parity tests: the same kernel kind built on the CPU test device and on
// cuda:0, inputs made on the host and copied over, results compared in logical order.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "device/registry.h"
#include "layers/kernel_cache.h"
#include "layers/kernels.h"
#include "support/cuda_test.h"
#include "support/grad_check.h"

namespace tandem::test {

inline Device& cpu() { return test_device(); }
inline Device& gpu() { return cuda_test_device(0); }

template <class K>
std::unique_ptr<K> kernel_on(Device& device, const typename K::Config& config) {
    return KernelRegistry::instance().make<K>(device, config);
}

// |got - want| <= tol * max(1, |want|) for every element; reports the worst one.
inline void expect_near(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
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

}  // namespace tandem::test

// A learnable toy task for engine tests: 1 x 8 x 8 images of 3 classes, class k being noise
// around brightness k - 1; the same (step, n) always gives the same batch. `gain` multiplies
// the images (large images make large gradients: the loss-scaling tests overflow them).
#pragma once

#include <vector>

#include "base/rng.h"
#include "layers/layer.h"

namespace tandem::test {

struct Batch {
    Tensor images, labels;
};

inline Batch make_batch(int step, std::int64_t n, float gain = 1) {
    std::vector<float> x(static_cast<std::size_t>(n * 64));
    Tensor labels = Tensor::empty({n}, host_device(), DType::i32);
    for (std::int64_t i = 0; i < n; ++i) {
        const int k =
            static_cast<int>(rng_bits(rng_key(99, std::uint64_t(step)), std::uint64_t(i)) % 3);
        labels.data<int>()[i] = k;
        for (int j = 0; j < 64; ++j)
            x[static_cast<std::size_t>(i * 64 + j)] =
                gain * (float(k - 1) + 0.5f * rng_normal(rng_key(7, std::uint64_t(step)),
                                                         std::uint64_t(i * 64 + j)));
    }
    return {Tensor::from_vector({n, 1, 8, 8}, host_device(), x), labels};
}

// The mean of steps [from, to) of a run's losses: how a test reads a loss curve's start and end.
inline double mean_loss(const std::vector<double>& losses, std::size_t from, std::size_t to) {
    double sum = 0;
    for (std::size_t i = from; i < to; ++i) sum += losses[i];
    return sum / double(to - from);
}

}  // namespace tandem::test

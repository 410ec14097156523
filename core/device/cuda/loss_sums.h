// The losses' per-sample results, brought to the host and summed there in double (in sample
// order, so a GPU's sums are as reproducible as the CPU's): what the cross-entropy and the
// element losses share. `losses`: n doubles on `device`; `hits`: n i32 (1 when the sample was
// classified right), counted only when `count_correct`. Synchronises the compute stream.
#pragma once

#include <vector>

#include "device/cuda/cuda_device.h"
#include "kernels/kernels.h"

namespace tandem::cuda {

inline LossSums sum_per_sample(CudaDevice& device, const Tensor& losses, const Tensor& hits,
                               std::int64_t n, bool count_correct) {
    std::vector<double> loss(static_cast<std::size_t>(n));
    std::vector<int> right(static_cast<std::size_t>(n));
    device.copy_to_host(loss.data(), losses.raw(), loss.size() * sizeof(double));
    device.copy_to_host(right.data(), hits.raw(), right.size() * sizeof(int));
    LossSums sums{0, 0, n};
    for (std::size_t i = 0; i < loss.size(); ++i) {
        sums.loss += loss[i];
        if (count_correct) sums.correct += right[i];
    }
    return sums;
}

}  // namespace tandem::cuda

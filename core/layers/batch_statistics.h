// BatchStatistics: batch norm's per-channel statistics gathered over the micro-batches of a
// step, so the running statistics can be updated once from the whole batch ('deferred' batch
// norm) instead of once per micro-batch.
//
// For each layer it keeps, per channel, sum(n_i * mean_i), sum(n_i * (var_i + mean_i^2)) and
// sum(n_i) in double: the whole batch's mean and biased variance follow exactly, whatever the
// micro-batch sizes. One object per worker and step (not thread-safe); the engine merges the
// workers' objects in a fixed order.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tensor/tensor.h"

namespace tandem {

class Layer;

class BatchStatistics {
public:
    struct Sums {
        std::vector<double> weighted_mean;    // sum of n_i * mean_i
        std::vector<double> weighted_moment;  // sum of n_i * (var_i + mean_i^2)
        std::int64_t count = 0;               // sum of n_i

        // Adds `other` (same channel count).
        void merge(const Sums& other);
        // The batch's mean and biased variance, as f32 tensors of C values on the host device.
        std::pair<Tensor, Tensor> mean_and_variance() const;
    };

    // One micro-batch's mean and biased variance (C values each) over `count` values per channel.
    void add(const Layer* layer, const Tensor& mean, const Tensor& variance, std::int64_t count);
    // What `layer` added this step; null when nothing.
    const Sums* find(const Layer* layer) const;

private:
    std::unordered_map<const Layer*, Sums> sums_;
};

}  // namespace tandem

#include "layers/batch_statistics.h"

#include "base/error.h"
#include "layers/layer.h"

namespace tandem {

void BatchStatistics::Sums::merge(const Sums& other) {
    if (weighted_mean.empty()) {
        *this = other;
        return;
    }
    TANDEM_CHECK(other.weighted_mean.size() == weighted_mean.size())
        << "batch statistics of " << other.weighted_mean.size() << " channels merged into "
        << weighted_mean.size();
    for (std::size_t c = 0; c < weighted_mean.size(); ++c) {
        weighted_mean[c] += other.weighted_mean[c];
        weighted_moment[c] += other.weighted_moment[c];
    }
    count += other.count;
}

std::pair<Tensor, Tensor> BatchStatistics::Sums::mean_and_variance() const {
    TANDEM_CHECK(count > 0) << "batch statistics over no values";
    std::vector<float> mean(weighted_mean.size()), variance(weighted_mean.size());
    for (std::size_t c = 0; c < mean.size(); ++c) {
        const double m = weighted_mean[c] / double(count);
        mean[c] = float(m);
        variance[c] = float(std::max(0.0, weighted_moment[c] / double(count) - m * m));
    }
    const Shape shape{static_cast<std::int64_t>(mean.size())};
    return {Tensor::from_vector(shape, host_device(), mean),
            Tensor::from_vector(shape, host_device(), variance)};
}

void BatchStatistics::add(const Layer* layer, const Tensor& mean, const Tensor& variance,
                          std::int64_t count) {
    const std::vector<float> m = mean.to_vector(), v = variance.to_vector();
    TANDEM_CHECK(m.size() == v.size())
        << "batch statistics: " << m.size() << " means, " << v.size() << " variances";
    Sums& s = sums_[layer];
    if (s.weighted_mean.empty())
        s.weighted_mean.assign(m.size(), 0.0), s.weighted_moment.assign(m.size(), 0.0);
    TANDEM_CHECK(s.weighted_mean.size() == m.size())
        << layer->label() << ": batch statistics of " << m.size() << " channels after "
        << s.weighted_mean.size();
    for (std::size_t c = 0; c < m.size(); ++c) {
        s.weighted_mean[c] += double(count) * m[c];
        s.weighted_moment[c] += double(count) * (double(v[c]) + double(m[c]) * m[c]);
    }
    s.count += count;
}

const BatchStatistics::Sums* BatchStatistics::find(const Layer* layer) const {
    auto it = sums_.find(layer);
    return it == sums_.end() ? nullptr : &it->second;
}

}  // namespace tandem

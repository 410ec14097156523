// The samples a loader has found corrupt, by source index, over all its epochs: each is
// reported once rather than every epoch, and an epoch's batch count leaves out those it will
// meet. Thread-safe: the assembly thread adds, the consumer reads.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <vector>

namespace tandem {

class CorruptSamples {
public:
    // True the first time `index` is added.
    bool add(std::int64_t index) {
        std::lock_guard lock(mutex_);
        return indices_.insert(index).second;
    }
    std::int64_t size() const {
        std::lock_guard lock(mutex_);
        return static_cast<std::int64_t>(indices_.size());
    }
    // How many of `indices` are known corrupt.
    std::int64_t count_in(const std::vector<std::int64_t>& indices) const {
        std::lock_guard lock(mutex_);
        std::int64_t n = 0;
        for (auto i : indices) n += static_cast<std::int64_t>(indices_.count(i));
        return n;
    }

private:
    mutable std::mutex mutex_;
    std::set<std::int64_t> indices_;
};

}  // namespace tandem

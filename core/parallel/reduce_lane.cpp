#include "parallel/reduce_lane.h"

#include <exception>

namespace tandem {

void ReduceLane::post(std::function<void()> job) {
    pending_.push_back(worker_.submit(std::move(job)));
}

void ReduceLane::wait() {
    std::exception_ptr first;
    for (auto& f : pending_) {
        try {
            f.get();
        } catch (...) {
            if (!first) first = std::current_exception();
        }
    }
    pending_.clear();
    if (first) std::rethrow_exception(first);
}

void ReduceLane::drain() noexcept {
    for (auto& f : pending_) f.wait();
    pending_.clear();
}

}  // namespace tandem

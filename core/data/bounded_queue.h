// BoundedQueue: the link between two stages of the image pipeline (issue 3). A producer blocks
// while the queue is full, a consumer while it is empty, so a fast stage cannot run ahead of a
// slow one by more than the capacity: memory stays bounded and back-pressure does the pacing.
//
// Two ways to end it, because a pipeline ends in two ways:
//   close()  — the producers are done: pushes fail, pops drain what is left, then return
//              nothing (the end of an epoch flows downstream).
//   cancel() — stop now: pushes fail, pops return nothing at once, the contents are dropped
//              (closing a loader mid-epoch, or an error in any stage).
// Both wake every blocked thread, so no stage can hang on a queue whose partner has gone.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "base/error.h"

namespace tandem {

template <class T>
class BoundedQueue {
public:
    explicit BoundedQueue(std::size_t capacity) : capacity_(capacity) {
        TANDEM_CHECK_AS(ConfigError, capacity > 0) << "a bounded queue needs a capacity above 0";
    }
    BoundedQueue(const BoundedQueue&) = delete;
    BoundedQueue& operator=(const BoundedQueue&) = delete;

    // Waits for room; false (and `value` dropped) when the queue was closed or cancelled.
    bool push(T value) {
        std::unique_lock lock(mutex_);
        not_full_.wait(lock, [&] { return items_.size() < capacity_ || closed_; });
        if (closed_) return false;
        items_.push_back(std::move(value));
        not_empty_.notify_one();
        return true;
    }

    // Waits for an item; nothing once the queue is closed and drained, or cancelled.
    std::optional<T> pop() {
        std::unique_lock lock(mutex_);
        not_empty_.wait(lock, [&] { return !items_.empty() || closed_; });
        if (items_.empty()) return std::nullopt;
        T value = std::move(items_.front());
        items_.pop_front();
        not_full_.notify_one();
        return value;
    }

    void close() {
        std::lock_guard lock(mutex_);
        closed_ = true;
        not_full_.notify_all();
        not_empty_.notify_all();
    }

    void cancel() {
        std::deque<T> dropped;  // destroyed outside the lock
        {
            std::lock_guard lock(mutex_);
            closed_ = true;
            dropped.swap(items_);
            not_full_.notify_all();
            not_empty_.notify_all();
        }
    }

    std::size_t size() const {
        std::lock_guard lock(mutex_);
        return items_.size();
    }
    std::size_t capacity() const { return capacity_; }

private:
    const std::size_t capacity_;
    mutable std::mutex mutex_;
    std::condition_variable not_full_;
    std::condition_variable not_empty_;
    std::deque<T> items_;
    bool closed_ = false;
};

}  // namespace tandem

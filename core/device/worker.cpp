#include "device/worker.h"

namespace tandem {

Worker::Worker(std::string name, std::function<void()> on_start) : name_(std::move(name)) {
    thread_ = std::thread([this, on_start = std::move(on_start)]() mutable { loop(std::move(on_start)); });
}

Worker::~Worker() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
}

std::future<void> Worker::submit(std::function<void()> task) {
    std::packaged_task<void()> packaged(std::move(task));
    auto future = packaged.get_future();
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(packaged));
    }
    wake_.notify_one();
    return future;
}

void Worker::run(std::function<void()> task) {
    // A task that runs work on its own worker would wait for itself: run it in place.
    if (on_worker_thread()) {
        task();
        return;
    }
    submit(std::move(task)).get();
}

void Worker::loop(std::function<void()> on_start) {
    if (on_start) on_start();
    for (;;) {
        std::packaged_task<void()> task;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stopping, and nothing left to run
            task = std::move(queue_.front());
            queue_.pop_front();
        }
        task();  // packaged_task stores any exception in the future
    }
}

}  // namespace tandem

#include "device/worker.h"

#include "base/thread_times.h"

namespace tandem {

Worker::Worker(std::string name, std::function<void()> on_start) : name_(std::move(name)) {
    thread_ = std::thread(&Worker::loop, state_, name_, std::move(on_start));
}

Worker::~Worker() {
    {
        std::lock_guard lock(state_->mutex);
        state_->stopping = true;
    }
    state_->wake.notify_one();
    // The last reference to a device may go away inside one of its own tasks; a thread cannot
    // join itself, so it finishes the queue and ends on its own (it shares the queue's state).
    if (on_worker_thread())
        thread_.detach();
    else
        thread_.join();
}

std::future<void> Worker::submit(std::function<void()> task) {
    std::packaged_task<void()> packaged(std::move(task));
    auto future = packaged.get_future();
    {
        std::lock_guard lock(state_->mutex);
        state_->queue.push_back(std::move(packaged));
    }
    state_->wake.notify_one();
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

void Worker::loop(std::shared_ptr<State> state, const std::string& name,
                  std::function<void()> on_start) {
    // Before on_start, so the OpenMP threads a kernel starts here take the name too.
    name_training_thread(name);
    if (on_start) on_start();
    for (;;) {
        std::packaged_task<void()> task;
        {
            std::unique_lock lock(state->mutex);
            state->wake.wait(lock, [&] { return state->stopping || !state->queue.empty(); });
            if (state->queue.empty()) break;  // stopping, and nothing left to run
            task = std::move(state->queue.front());
            state->queue.pop_front();
        }
        task();  // packaged_task stores any exception in the future
    }
    // This thread and its OpenMP threads end with it: what they ran and waited is counted now.
    training_thread_times().note_ending_thread();
}

}  // namespace tandem

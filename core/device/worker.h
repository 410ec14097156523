// Worker: one thread that runs submitted tasks in order.
//
// Each device owns one. A task's exception never escapes the thread: it is stored in the
// task's future and rethrown to whoever waits on it, so a failing kernel reaches the caller
// (and, through the Lua binding, the recipe) instead of terminating the process.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace tandem {

class Worker {
public:
    // `on_start` runs first on the new thread (e.g. to set the thread's kernel thread count).
    explicit Worker(std::string name, std::function<void()> on_start = {});
    // Runs the tasks already queued, then joins.
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    // Queues `task`; its result or exception arrives through the future.
    std::future<void> submit(std::function<void()> task);
    // Runs `task` on the worker and waits; rethrows its exception here.
    void run(std::function<void()> task);

    const std::string& name() const { return name_; }
    bool on_worker_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

private:
    // Shared with the thread, so a thread detached from its own task (see ~Worker) still has
    // its queue after the Worker object is gone.
    struct State {
        std::mutex mutex;
        std::condition_variable wake;
        std::deque<std::packaged_task<void()>> queue;
        bool stopping = false;
    };
    // Names the thread a training thread (base/thread_times.h), then runs on_start and the tasks.
    static void loop(std::shared_ptr<State> state, const std::string& name,
                     std::function<void()> on_start);

    std::string name_;
    std::shared_ptr<State> state_ = std::make_shared<State>();
    std::thread thread_;
};

}  // namespace tandem

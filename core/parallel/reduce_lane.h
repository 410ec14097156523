// ReduceLane: a stage's gradient all-reduces on a thread of their own, so that they overlap the
// rest of the stage's backward (what a CUDA stream does for NCCL, or DDP's reducer for Gloo).
//
// The stage's worker posts each bucket as soon as its gradients are final (during the last
// micro-batch's backward, last layer first) and waits for them all before the optimizer step.
// Jobs run one at a time, in the order posted, so every replica's lane makes its collectives
// in the same order. Only the stage's worker thread calls post, wait and drain.
//
// Failure: wait() rethrows the first job's error once every job has finished. When the step
// fails elsewhere, the engine aborts the communicators (so no job can block) and drains the
// lane before the communicators are reset: no job from a failed step outlives it.
#pragma once

#include <functional>
#include <future>
#include <string>
#include <vector>

#include "device/worker.h"

namespace tandem {

class ReduceLane {
public:
    explicit ReduceLane(std::string name) : worker_(std::move(name)) {}

    const std::string& name() const { return worker_.name(); }
    // Queues `job` behind those posted before it.
    void post(std::function<void()> job);
    // Waits for every posted job; rethrows the first failure.
    void wait();
    // Waits for every posted job, dropping their failures (the step has already failed).
    void drain() noexcept;

private:
    Worker worker_;
    std::vector<std::future<void>> pending_;
};

}  // namespace tandem

// StepBoard: where the stages of a step hand tensors to each other, and how a failure anywhere
// stops everyone.
//
// Each worker group has S - 1 links between consecutive stages; on link l, stage l posts the
// activation of each micro-batch for stage l + 1, and stage l + 1 posts the gradient back.
// take() blocks until the tensor is there. When a worker fails it calls fail(): the first
// error is kept, and every take() in progress or to come throws CancelledError at once, so no
// worker is left waiting for a tensor that will never come. The engine then rethrows the
// first error to the caller.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace tandem {

enum class LinkDirection { forward, backward };

class StepBoard {
public:
    StepBoard(int groups, int links, int micro_batches);

    void put(LinkDirection direction, int group, int link, int micro_batch, Tensor tensor);
    // Waits for the tensor and removes it from the board.
    Tensor take(LinkDirection direction, int group, int link, int micro_batch);

    // Records `error` (the first one wins; CancelledError never overrides a real one) and
    // wakes every waiter. Returns the reason text other parties are given.
    std::string fail(std::exception_ptr error);
    bool failed() const;
    // The first error recorded (null when none).
    std::exception_ptr first_error() const;

private:
    struct Slot {
        Tensor tensor;
        bool ready = false;
        // One taker waits on a slot: a put wakes it alone, not every waiting worker (on
        // over-subscribed cores the others would only compete with it for a core).
        std::condition_variable changed;
    };
    Slot& slot(LinkDirection direction, int group, int link, int micro_batch);

    int groups_, links_, micro_batches_;
    std::vector<Slot> slots_;
    mutable std::mutex mutex_;
    std::exception_ptr error_;
    bool error_is_cancel_ = false;
    std::string reason_;
};

// The message of an exception_ptr's exception ("unknown error" for non-std exceptions).
std::string error_message(const std::exception_ptr& error);

}  // namespace tandem

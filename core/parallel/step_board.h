// StepBoard: where the stages of a step hand tensors to each other, and how a failure anywhere
// stops everyone.
//
// Tensors are keyed by the stage-graph edge they move along (stage_graph.h; Op::edge): per
// group, edge and micro-batch, the stage the edge comes from posts the activation forward, and
// the stage it goes to posts the gradient back. A stage with several readers posts its output
// on each of their edges, and takes a gradient from each. take() blocks until the tensor is
// there. When a worker fails it calls fail(): the first
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

enum class EdgeDirection { forward, backward };  // the activation, or its gradient

class StepBoard {
public:
    // `edges`: the stage graph's (those from the batch or to the loss are never posted on).
    StepBoard(int groups, int edges, int micro_batches);

    void put(EdgeDirection direction, int group, int edge, int micro_batch, Tensor tensor);
    // Waits for the tensor and removes it from the board.
    Tensor take(EdgeDirection direction, int group, int edge, int micro_batch);

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
    Slot& slot(EdgeDirection direction, int group, int edge, int micro_batch);

    int groups_, edges_, micro_batches_;
    std::vector<Slot> slots_;
    mutable std::mutex mutex_;
    std::exception_ptr error_;
    bool error_is_cancel_ = false;
    std::string reason_;
};

// The message of an exception_ptr's exception ("unknown error" for non-std exceptions).
std::string error_message(const std::exception_ptr& error);

}  // namespace tandem

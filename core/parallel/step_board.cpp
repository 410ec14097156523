#include "parallel/step_board.h"

#include "base/error.h"

namespace tandem {

StepBoard::StepBoard(int groups, int edges, int micro_batches)
    : groups_(groups), edges_(edges), micro_batches_(micro_batches),
      slots_(static_cast<std::size_t>(2 * groups * edges * micro_batches)) {}

StepBoard::Slot& StepBoard::slot(EdgeDirection direction, int group, int edge, int micro_batch) {
    TANDEM_CHECK(group >= 0 && group < groups_ && edge >= 0 && edge < edges_ && micro_batch >= 0 &&
                 micro_batch < micro_batches_)
        << "step board: no slot for group " << group << ", edge " << edge << ", micro-batch "
        << micro_batch;
    const int d = direction == EdgeDirection::forward ? 0 : 1;
    return slots_[static_cast<std::size_t>(
        ((d * groups_ + group) * edges_ + edge) * micro_batches_ + micro_batch)];
}

void StepBoard::put(EdgeDirection direction, int group, int edge, int micro_batch, Tensor tensor) {
    Slot* s = nullptr;
    {
        std::lock_guard lock(mutex_);
        s = &slot(direction, group, edge, micro_batch);
        TANDEM_CHECK(!s->ready) << "step board: edge " << edge << " of group " << group
                                << " already holds micro-batch " << micro_batch;
        s->tensor = std::move(tensor);
        s->ready = true;
    }
    s->changed.notify_one();
}

Tensor StepBoard::take(EdgeDirection direction, int group, int edge, int micro_batch) {
    std::unique_lock lock(mutex_);
    Slot& s = slot(direction, group, edge, micro_batch);
    s.changed.wait(lock, [&] { return s.ready || error_ != nullptr; });
    if (!s.ready) TANDEM_THROW(CancelledError) << "step stopped: " << reason_;
    s.ready = false;
    return std::move(s.tensor);
}

std::string StepBoard::fail(std::exception_ptr error) {
    bool is_cancel = false;
    try {
        std::rethrow_exception(error);
    } catch (const CancelledError&) {
        is_cancel = true;
    } catch (...) {
    }
    std::string reason;
    {
        std::lock_guard lock(mutex_);
        if (!error_ || (error_is_cancel_ && !is_cancel)) {
            error_ = error;
            error_is_cancel_ = is_cancel;
            reason_ = error_message(error);
        }
        reason = reason_;
    }
    for (Slot& s : slots_) s.changed.notify_all();
    return reason;
}

bool StepBoard::failed() const {
    std::lock_guard lock(mutex_);
    return error_ != nullptr;
}

std::exception_ptr StepBoard::first_error() const {
    std::lock_guard lock(mutex_);
    return error_;
}

std::string error_message(const std::exception_ptr& error) {
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown error";
    }
}

}  // namespace tandem

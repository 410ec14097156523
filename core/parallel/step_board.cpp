#include "parallel/step_board.h"

#include "base/error.h"

namespace tandem {

StepBoard::StepBoard(int groups, int links, int micro_batches)
    : groups_(groups), links_(links), micro_batches_(micro_batches),
      slots_(static_cast<std::size_t>(2 * groups * links * micro_batches)) {}

StepBoard::Slot& StepBoard::slot(LinkDirection direction, int group, int link, int micro_batch) {
    TANDEM_CHECK(group >= 0 && group < groups_ && link >= 0 && link < links_ && micro_batch >= 0 &&
                 micro_batch < micro_batches_)
        << "step board: no slot for group " << group << ", link " << link << ", micro-batch "
        << micro_batch;
    const int d = direction == LinkDirection::forward ? 0 : 1;
    return slots_[static_cast<std::size_t>(((d * groups_ + group) * links_ + link) * micro_batches_ +
                                           micro_batch)];
}

void StepBoard::put(LinkDirection direction, int group, int link, int micro_batch, Tensor tensor) {
    Slot* s = nullptr;
    {
        std::lock_guard lock(mutex_);
        s = &slot(direction, group, link, micro_batch);
        TANDEM_CHECK(!s->ready) << "step board: link " << link << " of group " << group
                                << " already holds micro-batch " << micro_batch;
        s->tensor = std::move(tensor);
        s->ready = true;
    }
    s->changed.notify_one();
}

Tensor StepBoard::take(LinkDirection direction, int group, int link, int micro_batch) {
    std::unique_lock lock(mutex_);
    Slot& s = slot(direction, group, link, micro_batch);
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

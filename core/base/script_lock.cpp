#include "base/script_lock.h"

namespace tandem {

ScriptLock::ScriptLock() {
    mutex_.lock();
    holder_.store(std::this_thread::get_id());
}

ScriptLock::~ScriptLock() {
    if (held_here()) mutex_.unlock();
}

ScriptLock::Lend::Lend(ScriptLock& lock) : lock_(lock) {
    if (!lock_.held_here()) return;  // not holding it: nothing to lend
    lent_ = true;
    was_lent_ = lock_.lent_.exchange(true);  // a worker lending in turn: its lender's still is
    lock_.holder_.store(std::thread::id());
    lock_.mutex_.unlock();
}

ScriptLock::Lend::~Lend() {
    if (!lent_) return;
    lock_.mutex_.lock();
    lock_.lent_.store(was_lent_);
    lock_.holder_.store(std::this_thread::get_id());
}

}  // namespace tandem

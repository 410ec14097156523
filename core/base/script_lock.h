// ScriptLock: one interpreter (the Lua state) shared by the thread that runs it and the
// engine's worker threads, which call layers written in Lua.
//
// An interpreter runs one thread at a time. The thread that runs it (the recipe's) holds the
// lock; while it waits in a long C++ call that needs workers to run Lua (an engine step), it
// lends the lock out (Lend), and the workers take it in turn for each call into Lua (run).
// A worker that needs the interpreter while the lock is held and not lent gets an Error
// saying so, instead of waiting for ever on a holder that waits for it.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "base/error.h"

namespace tandem {

class ScriptLock {
public:
    // The calling thread holds the lock from now on (the interpreter's own thread).
    ScriptLock();
    ~ScriptLock();
    ScriptLock(const ScriptLock&) = delete;
    ScriptLock& operator=(const ScriptLock&) = delete;

    // While alive, the holder has lent the lock out; it takes it back when destroyed (by then
    // the C++ call it wrapped has returned, so no worker is inside the interpreter).
    class Lend {
    public:
        explicit Lend(ScriptLock& lock);
        ~Lend();
        Lend(const Lend&) = delete;
        Lend& operator=(const Lend&) = delete;

    private:
        ScriptLock& lock_;
        bool lent_ = false;      // false when the calling thread had nothing to lend
        bool was_lent_ = false;  // whether the lock was lent out already (a nested Lend)
    };

    // fn() with the interpreter to itself: at once on the thread that holds the lock, else
    // after taking the lent lock. Error naming `who` when the lock is held and not lent.
    template <class F>
    auto run(const std::string& who, F&& fn) -> decltype(fn()) {
        if (holder_.load() == std::this_thread::get_id()) return fn();
        if (!lent_.load())
            TANDEM_THROW(Error)
                << who
                << " runs Lua code, which a worker thread can run only during an "
                   "engine's construction, steps and evaluation (T.Engine), not here";
        std::lock_guard<std::mutex> guard(mutex_);
        Holding holding(*this);
        return fn();
    }

    // Whether the calling thread holds the lock (and may use the interpreter).
    bool held_here() const { return holder_.load() == std::this_thread::get_id(); }

private:
    // Marks the calling thread as the holder for as long as it is alive.
    struct Holding {
        explicit Holding(ScriptLock& lock)
            : lock_(lock), before_(lock.holder_.exchange(std::this_thread::get_id())) {}
        ~Holding() { lock_.holder_.store(before_); }
        ScriptLock& lock_;
        std::thread::id before_;
    };

    std::mutex mutex_;
    std::atomic<std::thread::id> holder_;
    std::atomic<bool> lent_{false};
};

}  // namespace tandem

// ScriptLock: the interpreter's thread runs at once; workers run only while it is lent, one
// at a time; a worker is told, not left waiting, when it is not lent.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "base/script_lock.h"

namespace tandem::test {
namespace {

TEST(ScriptLock, TheHolderRunsAtOnce) {
    ScriptLock lock;
    EXPECT_TRUE(lock.held_here());
    EXPECT_EQ(lock.run("layer 'x'", [] { return 7; }), 7);
}

TEST(ScriptLock, AWorkerIsToldWhenTheLockIsNotLent) {
    ScriptLock lock;
    std::string message;
    std::thread worker([&] {
        try {
            lock.run("layer 'scale' (written in Lua)", [] { return 0; });
        } catch (const Error& e) {
            message = e.what();
        }
    });
    worker.join();
    EXPECT_NE(message.find("layer 'scale' (written in Lua) runs Lua code"), std::string::npos)
        << message;
}

TEST(ScriptLock, WorkersTakeTheLentLockOneAtATime) {
    ScriptLock lock;
    int inside = 0, calls = 0;  // plain ints: only the lock keeps them consistent
    {
        ScriptLock::Lend lend(lock);
        EXPECT_FALSE(lock.held_here());
        std::vector<std::thread> workers;
        for (int w = 0; w < 4; ++w)
            workers.emplace_back([&] {
                for (int i = 0; i < 200; ++i)
                    lock.run("layer", [&] {
                        EXPECT_TRUE(lock.held_here());
                        EXPECT_EQ(++inside, 1);
                        ++calls;
                        --inside;
                        return 0;
                    });
            });
        for (auto& w : workers) w.join();
    }
    EXPECT_EQ(calls, 800);
    EXPECT_TRUE(lock.held_here());  // taken back
    std::thread late([&] { EXPECT_THROW(lock.run("layer", [] { return 0; }), Error); });
    late.join();
}

// A worker inside run() may lend in turn (Lua code that steps an engine), and takes it back.
TEST(ScriptLock, AWorkerInsideRunMayLendInTurn) {
    ScriptLock lock;
    ScriptLock::Lend lend(lock);
    std::thread worker([&] {
        lock.run("outer", [&] {
            {
                ScriptLock::Lend inner(lock);
                std::thread nested([&] { EXPECT_EQ(lock.run("inner", [] { return 3; }), 3); });
                nested.join();
            }
            EXPECT_TRUE(lock.held_here());
            return 0;
        });
    });
    worker.join();
    std::thread after([&] { EXPECT_EQ(lock.run("after", [] { return 4; }), 4); });  // still lent
    after.join();
}

}  // namespace
}  // namespace tandem::test

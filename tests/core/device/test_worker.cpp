#include <gtest/gtest.h>

#include <pthread.h>

#include <atomic>
#include <vector>

#include "base/error.h"
#include "base/thread_times.h"
#include "device/worker.h"
#include "support/spin.h"

namespace tandem {
namespace {

// A worker's thread is a training thread, named after it, and what it ran counts once it has
// ended, though no sample saw it alive (a planner's profile runs on devices made and dropped
// between two progress lines).
TEST(Worker, NamesItsThreadAndCountsItsTimeWhenItEnds) {
    auto& meter = training_thread_times();
    const auto before = meter.sample();
    if (!before) GTEST_SKIP() << "this kernel keeps no per-thread scheduler counts (schedstat)";
    {
        Worker worker("cpu:7");
        worker.run([] {
            char name[16] = {};
            pthread_getname_np(pthread_self(), name, sizeof name);
            EXPECT_STREQ(name, "tandem cpu:7");
            test::spin_for(0.05);
        });
    }
    const auto after = meter.sample();
    ASSERT_TRUE(after);
    EXPECT_GE(after->ran_s - before->ran_s, 0.045);
}

TEST(Worker, RunsTasksInOrderOnItsThread) {
    Worker worker("w");
    std::vector<int> order;
    std::vector<std::future<void>> done;
    for (int i = 0; i < 100; ++i)
        done.push_back(worker.submit([&order, i, &worker] {
            EXPECT_TRUE(worker.on_worker_thread());
            order.push_back(i);
        }));
    for (auto& f : done) f.get();
    ASSERT_EQ(order.size(), 100u);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
}

TEST(Worker, ExceptionReachesTheCallerAndTheWorkerGoesOn) {
    Worker worker("w");
    EXPECT_THROW(worker.run([] { TANDEM_THROW(ShapeError) << "bad shape"; }), ShapeError);
    std::atomic<int> ran{0};
    worker.run([&] { ++ran; });
    EXPECT_EQ(ran.load(), 1);
}

TEST(Worker, DestructorRunsQueuedTasks) {
    std::atomic<int> ran{0};
    {
        Worker worker("w");
        for (int i = 0; i < 10; ++i) worker.submit([&] { ++ran; });
    }
    EXPECT_EQ(ran.load(), 10);
}

TEST(Worker, MayBeReleasedFromItsOwnThread) {
    // The last reference to a worker (as to a device) can drop inside its own queue.
    auto worker = std::make_shared<Worker>("w");
    std::promise<void> ran;
    auto done = ran.get_future();
    worker->submit([keep = worker, &ran] { ran.set_value(); });
    worker.reset();  // now only the queued task holds it
    done.wait();
}

}  // namespace
}  // namespace tandem

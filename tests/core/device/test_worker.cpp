#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "base/error.h"
#include "device/worker.h"

namespace tandem {
namespace {

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

#include <gtest/gtest.h>

#include <thread>

#include "data/bounded_queue.h"

namespace tandem::test {
namespace {

TEST(BoundedQueue, FifoAcrossThreadsWithBackPressure) {
    BoundedQueue<int> q(2);
    std::thread producer([&] {
        for (int i = 0; i < 1000; ++i) ASSERT_TRUE(q.push(i));
        q.close();
    });
    int expected = 0;
    while (auto v = q.pop()) {
        EXPECT_EQ(*v, expected++);
        EXPECT_LE(q.size(), 2u);
    }
    producer.join();
    EXPECT_EQ(expected, 1000);
}

TEST(BoundedQueue, CloseDrainsThenEnds) {
    BoundedQueue<int> q(4);
    q.push(1);
    q.push(2);
    q.close();
    EXPECT_FALSE(q.push(3));
    EXPECT_EQ(q.pop(), 1);
    EXPECT_EQ(q.pop(), 2);
    EXPECT_EQ(q.pop(), std::nullopt);
}

TEST(BoundedQueue, CancelWakesBlockedProducerAndConsumer) {
    BoundedQueue<int> full(1);
    full.push(0);
    std::thread producer([&] { EXPECT_FALSE(full.push(1)); });
    BoundedQueue<int> empty(1);
    std::thread consumer([&] { EXPECT_EQ(empty.pop(), std::nullopt); });
    full.cancel();
    empty.cancel();
    producer.join();
    consumer.join();
    EXPECT_EQ(full.pop(), std::nullopt);  // contents dropped
}

}  // namespace
}  // namespace tandem::test

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_times.h"
#include "support/spin.h"

namespace tandem {
namespace {

using test::spin_for;

std::string calling_thread_name() {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof name);
    return name;
}

// The first core this process may run on.
int first_allowed_core() {
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) return c;
    return 0;
}

void pin_calling_thread(int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

TEST(ThreadTimes, NamesTrainingThreadsAndCutsToWhatLinuxKeeps) {
    std::string short_name, long_name, helper;
    std::thread([&] {
        name_training_thread("cpu:0");
        short_name = calling_thread_name();
        name_training_thread("cpu:0 all-reduce");
        long_name = calling_thread_name();
        name_thread("loader decode");
        helper = calling_thread_name();
    }).join();
    EXPECT_EQ(short_name, "tandem cpu:0");
    EXPECT_EQ(long_name, "tandem cpu:0 al");
    EXPECT_EQ(helper, "loader decode");
}

TEST(ThreadTimes, CountsTheWaitOfTrainingThreadsSharingOneCore) {
    TrainingThreadTimes meter;
    const auto before = meter.sample();
    if (!before) GTEST_SKIP() << "this kernel keeps no per-thread scheduler counts (schedstat)";
    // Three training threads on one core, each wanting 40 ms of it: while one runs, the other two
    // wait in the run queue, whatever the scheduler's order. They stay until sampled, since a
    // thread that ends unseen is not counted.
    const int core = first_allowed_core();
    std::latch spun(3), sampled(1);
    std::vector<std::thread> team;
    for (int i = 0; i < 3; ++i)
        team.emplace_back([&] {
            name_training_thread("test");
            pin_calling_thread(core);
            spin_for(0.04);
            spun.count_down();
            sampled.wait();
        });
    spun.wait();
    const auto during = meter.sample();
    sampled.count_down();
    for (auto& t : team) t.join();
    // Sampled again once they have ended: what was seen of them stays in the totals.
    const auto after = meter.sample();
    ASSERT_TRUE(during && after);
    EXPECT_GE(after->ran_s - before->ran_s, 3 * 0.04 * 0.9);
    EXPECT_GT(after->waited_s - before->waited_s, 0.01);
    // The ended threads keep what was last seen of them: the totals do not fall.
    EXPECT_GE(after->ran_s, during->ran_s);
    EXPECT_GE(after->waited_s, during->waited_s);
}

TEST(ThreadTimes, LeavesOtherThreadsOut) {
    TrainingThreadTimes meter;
    const auto before = meter.sample();
    if (!before) GTEST_SKIP() << "this kernel keeps no per-thread scheduler counts (schedstat)";
    std::latch spun(1), sampled(1);
    std::thread helper([&] {
        name_thread("loader decode");
        spin_for(0.05);
        spun.count_down();
        sampled.wait();
    });
    spun.wait();
    const auto after = meter.sample();  // while the helper is still there to be seen
    sampled.count_down();
    helper.join();
    ASSERT_TRUE(after);
    EXPECT_LT(after->ran_s - before->ran_s, 0.025);
}

}  // namespace
}  // namespace tandem

// profile_net's step times when profiles run side by side (MeasuredCostModel's contention): a
// step is timed from the moment after_step says the previous one ended (a barrier's release),
// not from when this thread got a core again.
#include <gtest/gtest.h>

#include <chrono>

#include "device/cpu/cpu_device.h"
#include "layers/cross_entropy.h"
#include "layers/linear.h"
#include "plan/profiler.h"

namespace tandem::test {
namespace {

TEST(Profiler, AStepIsTimedFromTheMomentAfterStepReturns) {
    CpuDevice device(0, CpuDeviceOptions{0, 1});  // first: the net's weights move onto it
    Sequential net({std::make_shared<Linear>(LinearOptions{4, 3, true, "kaiming"})});
    net.initialize(1);
    CrossEntropy loss;
    ProfileOptions po;
    po.warmup = 1, po.iterations = 4, po.quantile = 0;  // the fastest timed step
    // Every step ends "a second ago": each timed step (the first one's start is its own)
    // lasts at least that second and the time it took itself.
    po.after_step = [] { return std::chrono::steady_clock::now() - std::chrono::seconds(1); };
    // (Timed by its own clock, a step of a 4 -> 3 Linear takes microseconds.)
    EXPECT_GE(profile_net(net, loss, device, Shape({4}), 2, po).step_ms, 1000.0);
}

}  // namespace
}  // namespace tandem::test

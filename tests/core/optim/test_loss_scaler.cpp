// LossScaler (optim/loss_scaler.h): the dynamic scale halves on a non-finite step and doubles
// after its window of finite ones, a fixed one only counts skips, and its state round-trips
// (what a checkpoint keeps). And TensorOps' unscale, which the
// stages run: every tensor divided in place, and whether all came out finite.
#include <gtest/gtest.h>

#include <limits>

#include "kernels/kernel_cache.h"
#include "optim/loss_scaler.h"
#include "support/expect_error.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

LossScaler dynamic_scaler(float initial, std::int64_t window) {
    return LossScaler({LossScaleMode::dynamic, initial, window}, Precision::fp16);
}

TEST(LossScaler, AutoScalesDynamicallyInFp16Only) {
    EXPECT_EQ(resolve_loss_scale(LossScaleMode::automatic, Precision::fp16),
              LossScaleMode::dynamic);
    for (Precision p : {Precision::fp32, Precision::bf16, Precision::tf32})
        EXPECT_EQ(resolve_loss_scale(LossScaleMode::automatic, p), LossScaleMode::none);
    EXPECT_EQ(resolve_loss_scale(LossScaleMode::fixed, Precision::fp32), LossScaleMode::fixed);
    const LossScaler off({}, Precision::bf16);
    EXPECT_FALSE(off.enabled());
    EXPECT_EQ(off.scale(), 1.f);
    EXPECT_EQ(parse_loss_scale_mode("auto"), LossScaleMode::automatic);
    expect_error<ConfigError>([] { parse_loss_scale_mode("static"); },
                              "unknown loss_scale 'static' (known: auto, none, fixed, dynamic)");
}

TEST(LossScaler, DynamicScaleHalvesOnOverflowAndDoublesAfterItsWindow) {
    LossScaler s = dynamic_scaler(1024, 3);
    s.record(true);
    s.record(true);
    EXPECT_EQ(s.scale(), 1024.f);
    s.record(true);  // the third finite step in a row
    EXPECT_EQ(s.scale(), 2048.f);
    s.record(true);
    s.record(true);
    s.record(false);  // the run of finite steps starts again
    EXPECT_EQ(s.scale(), 1024.f);
    EXPECT_EQ(s.skipped(), 1);
    s.record(true);
    s.record(true);
    EXPECT_EQ(s.scale(), 1024.f);
    s.record(true);
    EXPECT_EQ(s.scale(), 2048.f);
}

TEST(LossScaler, DynamicScaleStopsGrowingBeforeAFloatOverflows) {
    const float top = std::numeric_limits<float>::max() / 2 * 1.5f;  // doubling would overflow
    LossScaler s = dynamic_scaler(top, 1);
    s.record(true);
    EXPECT_EQ(s.scale(), top);
}

TEST(LossScaler, NonFiniteGradientsAtScaleOneAreTheLossDivergingNotTheScale) {
    LossScaler s = dynamic_scaler(2, 10);
    s.record(false);
    EXPECT_EQ(s.scale(), 1.f);
    expect_error<Error>([&] { s.record(false); },
                        "not finite even with the loss scaled by 1: the loss has diverged");
    EXPECT_EQ(s.skipped(), 2);
}

TEST(LossScaler, FixedScaleSkipsWithoutChanging) {
    LossScaler s({LossScaleMode::fixed, 128, 1}, Precision::fp32);
    EXPECT_TRUE(s.enabled());
    for (int i = 0; i < 3; ++i) s.record(true);
    s.record(false);
    EXPECT_EQ(s.scale(), 128.f);
    EXPECT_EQ(s.skipped(), 1);
}

TEST(LossScaler, RefusesAScaleOrWindowThatCannotWork) {
    expect_error<ConfigError>([] { dynamic_scaler(0, 10); },
                              "initial_loss_scale must be a finite number > 0, got 0");
    expect_error<ConfigError>([] { dynamic_scaler(std::numeric_limits<float>::infinity(), 10); },
                              "initial_loss_scale must be a finite number > 0, got inf");
    expect_error<ConfigError>([] { dynamic_scaler(8, 0); },
                              "loss_scale_window must be at least 1 step, got 0");
}

// What a checkpoint keeps: a dynamic scaler continues from it, a fixed one takes only its
// skips, and restart() is a fresh run's (the metadata itself: test_engine_loss_scale.cpp).
TEST(LossScaler, StateRoundTripsAndRestarts) {
    LossScaler s = dynamic_scaler(65536, 4);
    s.record(false);  // 32768, one skipped
    s.record(true);   // one good step
    const LossScaler::State state = s.state();
    EXPECT_EQ(state.scale, 32768.f);
    EXPECT_EQ(state.good_steps, 1);
    EXPECT_EQ(state.skipped, 1);

    LossScaler resumed = dynamic_scaler(512, 4);
    resumed.restore(state);
    EXPECT_EQ(resumed.scale(), 32768.f);
    EXPECT_EQ(resumed.skipped(), 1);
    for (int i = 0; i < 3; ++i) resumed.record(true);  // 1 + 3 = the window
    EXPECT_EQ(resumed.scale(), 65536.f);

    LossScaler fixed({LossScaleMode::fixed, 128, 1}, Precision::fp32);
    fixed.restore(state);
    EXPECT_EQ(fixed.scale(), 128.f) << "a fixed scale is the run's option";
    EXPECT_EQ(fixed.skipped(), 1);

    resumed.restart();
    EXPECT_EQ(resumed.scale(), 512.f);
    EXPECT_EQ(resumed.skipped(), 0);
    expect_error<Error>([&] { resumed.restore({0.f, 0, 0}); }, "a loss scale of 0");
}

TEST(LossScaler, UnscaleDividesEveryTensorAndFindsInfOrNaN) {
    TensorOpsKernel& ops = tensor_ops(test_device());
    const std::vector<float> a_values{3072.f, -1.5f, 0.f, 6e30f}, b_values{4096.f, 2.f};
    Tensor a = Tensor::from_vector({4}, test_device(), a_values);
    Tensor b = Tensor::from_vector({2}, test_device(), b_values);
    EXPECT_TRUE(ops.unscale({&a, &b}, 1.f / 1024));
    EXPECT_EQ(a.to_vector(), (std::vector<float>{3.f, -1.5f / 1024, 0.f, 6e30f / 1024}));
    EXPECT_EQ(b.to_vector(), (std::vector<float>{4.f, 2.f / 1024}));
    // Past float's range, or NaN, in any tensor: not finite (and every tensor still divided).
    const float inf = std::numeric_limits<float>::infinity();
    for (float bad : {inf, -inf, std::numeric_limits<float>::quiet_NaN()}) {
        Tensor c = Tensor::from_vector({2}, test_device(), std::vector<float>{8.f, bad});
        Tensor d = Tensor::from_vector({1}, test_device(), std::vector<float>{16.f});
        EXPECT_FALSE(ops.unscale({&d, &c}, 0.5f)) << bad;
        EXPECT_EQ(d.to_vector(), std::vector<float>{8.f});
        EXPECT_EQ(c.to_vector()[0], 4.f);
    }
    // A large tensor (split between threads): one bad value among many.
    std::vector<float> many(1 << 20, 2.f);
    many[777777] = inf;
    Tensor e = Tensor::from_vector({std::int64_t(many.size())}, test_device(), many);
    EXPECT_FALSE(ops.unscale({&e}, 0.5f));
    EXPECT_EQ(e.to_vector()[5], 1.f);
}

}  // namespace
}  // namespace tandem::test

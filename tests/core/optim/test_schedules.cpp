#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>

#include "base/error.h"
#include "optim/schedules.h"

namespace tandem::test {
namespace {

constexpr float kLrTol = 1e-7f;

TEST(Schedules, Constant) {
    ConstantSchedule s(0.1f);
    EXPECT_FLOAT_EQ(s.lr(0), 0.1f);
    EXPECT_FLOAT_EQ(s.lr(1000000), 0.1f);
    EXPECT_EQ(s.describe(), "constant(lr=0.1)");
    EXPECT_THROW(s.lr(-1), ConfigError);
    EXPECT_THROW(ConstantSchedule(-0.1f), ConfigError);
}

TEST(Schedules, Step) {
    StepSchedule s(0.1f, 30, 0.1f);
    EXPECT_NEAR(s.lr(0), 0.1f, kLrTol);
    EXPECT_NEAR(s.lr(29), 0.1f, kLrTol);
    EXPECT_NEAR(s.lr(30), 0.01f, kLrTol);
    EXPECT_NEAR(s.lr(59), 0.01f, kLrTol);
    EXPECT_NEAR(s.lr(60), 0.001f, kLrTol);
    EXPECT_THROW(StepSchedule(0.1f, 0, 0.1f), ConfigError);
    EXPECT_THROW(StepSchedule(0.1f, 10, 0.f), ConfigError);
}

TEST(Schedules, MultiStep) {
    MultiStepSchedule s(1.0f, {10, 25}, 0.5f);
    EXPECT_FLOAT_EQ(s.lr(0), 1.0f);
    EXPECT_FLOAT_EQ(s.lr(9), 1.0f);
    EXPECT_FLOAT_EQ(s.lr(10), 0.5f);
    EXPECT_FLOAT_EQ(s.lr(24), 0.5f);
    EXPECT_FLOAT_EQ(s.lr(25), 0.25f);
    EXPECT_FLOAT_EQ(s.lr(1000), 0.25f);
    EXPECT_EQ(s.describe(), "multistep(lr=1, milestones=[10,25], gamma=0.5)");
    EXPECT_THROW(MultiStepSchedule(1.f, {10, 10}, 0.5f), ConfigError);
    EXPECT_THROW(MultiStepSchedule(1.f, {-1}, 0.5f), ConfigError);
}

TEST(Schedules, Cosine) {
    CosineSchedule s(0.1f, 100, 0.001f);
    EXPECT_NEAR(s.lr(0), 0.1f, kLrTol);
    EXPECT_NEAR(s.lr(50), 0.0505f, kLrTol);  // halfway: (lr + min) / 2
    // a quarter: min + (lr - min) * (1 + cos(pi/4)) / 2
    EXPECT_NEAR(s.lr(25), 0.001 + 0.099 * (1 + std::sqrt(0.5)) / 2, kLrTol);
    EXPECT_NEAR(s.lr(100), 0.001f, kLrTol);
    EXPECT_NEAR(s.lr(150), 0.001f, kLrTol);
    for (int i = 1; i <= 100; ++i) EXPECT_LE(s.lr(i), s.lr(i - 1)) << "step " << i;
    EXPECT_THROW(CosineSchedule(0.1f, 0), ConfigError);
    EXPECT_THROW(CosineSchedule(0.1f, -5), ConfigError);
}

TEST(Schedules, WarmupThenCosine) {
    auto cosine = std::make_shared<CosineSchedule>(0.1f, 100);
    WarmupSchedule s(cosine, 10, 0.1f);
    EXPECT_NEAR(s.lr(0), 0.01f, kLrTol);   // start_factor * after.lr(0)
    EXPECT_NEAR(s.lr(5), 0.055f, kLrTol);  // halfway: (0.1 + 1) / 2 * 0.1
    EXPECT_NEAR(s.lr(9), 0.091f, kLrTol);
    EXPECT_NEAR(s.lr(10), 0.1f, kLrTol);  // after.lr(0)
    for (int i = 10; i < 130; i += 7) EXPECT_EQ(s.lr(i), cosine->lr(i - 10)) << "step " << i;
    EXPECT_EQ(s.describe(),
              "warmup(steps=10, start_factor=0.1, then cosine(lr=0.1, total_steps=100, min_lr=0))");
    WarmupSchedule none(cosine, 0, 0.5f);
    EXPECT_EQ(none.lr(0), cosine->lr(0));
    EXPECT_THROW(WarmupSchedule(nullptr, 10, 0.1f), ConfigError);
    EXPECT_THROW(WarmupSchedule(cosine, -1, 0.1f), ConfigError);
    EXPECT_THROW(WarmupSchedule(cosine, 10, 1.5f), ConfigError);
}

TEST(Schedules, HybridCosineLinear) {
    const float lr = 0.2f, min_lr = 0.002f;
    HybridCosineLinearSchedule s(lr, 1000, 0.4f, min_lr);
    CosineSchedule cosine(lr, 1000, min_lr);
    // Cosine part: the cosine over all 1000 steps, up to the switch at step 400.
    for (int i : {0, 1, 100, 250, 399, 400}) EXPECT_NEAR(s.lr(i), cosine.lr(i), kLrTol) << i;
    // Linear part: from cosine(400) at 400 to min_lr at 1000.
    const double at_switch = min_lr + (lr - min_lr) * 0.5 * (1 + std::cos(0.4 * std::numbers::pi));
    EXPECT_NEAR(s.lr(700), (at_switch + min_lr) / 2, kLrTol);
    EXPECT_NEAR(s.lr(550), at_switch + (min_lr - at_switch) * 0.25, kLrTol);
    EXPECT_NEAR(s.lr(1000), min_lr, kLrTol);
    EXPECT_NEAR(s.lr(5000), min_lr, kLrTol);
    // Linear means equal differences after the switch.
    EXPECT_NEAR(s.lr(600) - s.lr(601), s.lr(900) - s.lr(901), 1e-7);
    // Continuity at the switch: no jump bigger than a step's worth of slope.
    const double slope = (at_switch - min_lr) / 600.0;
    EXPECT_NEAR(s.lr(400) - s.lr(401), slope, 1e-7);
    EXPECT_LT(std::abs(s.lr(399) - s.lr(400)), 2 * slope);

    // A switch between steps (fraction * total not an integer) still meets at the switch point.
    HybridCosineLinearSchedule odd(1.0f, 7, 0.5f, 0.f);
    const double odd_switch = 0.5 * (1 + std::cos(0.5 * std::numbers::pi));  // at step 3.5
    EXPECT_NEAR(odd.lr(3), 0.5 * (1 + std::cos(3.0 / 7 * std::numbers::pi)), 1e-6);
    EXPECT_NEAR(odd.lr(4), odd_switch * (1 - 0.5 / 3.5), 1e-6);

    HybridCosineLinearSchedule all_cosine(lr, 100, 1.0f, 0.f);
    CosineSchedule plain(lr, 100);
    for (int i = 0; i <= 100; i += 10) EXPECT_EQ(all_cosine.lr(i), plain.lr(i)) << i;

    EXPECT_THROW(HybridCosineLinearSchedule(lr, 100, 0.f), ConfigError);
    EXPECT_THROW(HybridCosineLinearSchedule(lr, 100, 1.5f), ConfigError);
    EXPECT_THROW(HybridCosineLinearSchedule(lr, 0, 0.5f), ConfigError);
    EXPECT_THROW(HybridCosineLinearSchedule(lr, 100, 0.5f, -1.f), ConfigError);
}

}  // namespace
// The errors name the constructor and option as the user wrote them in Lua (T.schedule.Hybrid's
// `switch`, T.schedule.Warmup's `steps`), not the C++ parameters (issue 19).
TEST(Schedules, ErrorsNameTheLuaOptions) {
    auto message = [](const std::function<void()>& make) -> std::string {
        try {
            make();
        } catch (const ConfigError& e) {
            return e.what();
        }
        return "(no error)";
    };
    const auto cosine = std::make_shared<CosineSchedule>(0.1f, 100);
    EXPECT_NE(message([] {
                  HybridCosineLinearSchedule(0.1f, 100, 1.5f);
              }).find("T.schedule.Hybrid: option 'switch' must be a number in (0, 1], got 1.5"),
              std::string::npos);
    EXPECT_NE(message([&] {
                  WarmupSchedule(cosine, -1, 0.1f);
              }).find("T.schedule.Warmup: option 'steps' must be >= 0, got -1"),
              std::string::npos);
    EXPECT_NE(message([&] {
                  WarmupSchedule(cosine, 5, 2.f);
              }).find("T.schedule.Warmup: option 'start_factor' must be a number in [0, 1], got 2"),
              std::string::npos);
    EXPECT_NE(message([] {
                  StepSchedule(0.1f, 10, 0.f);
              }).find("T.schedule.Step: option 'gamma' must be a finite number > 0, got 0"),
              std::string::npos);
    EXPECT_NE(message([] {
                  MultiStepSchedule(1.f, {-1}, 0.5f);
              }).find("T.schedule.MultiStep: option 'milestones' must be >= 0, got -1"),
              std::string::npos);
    EXPECT_NE(message([] {
                  CosineSchedule(-1.f, 10);
              }).find("T.schedule.Cosine: option 'lr' must be a finite number >= 0, got -1"),
              std::string::npos);
    EXPECT_EQ(HybridCosineLinearSchedule(0.1f, 10, 0.3f).describe(),
              "hybrid(lr=0.1, total_steps=10, switch=0.3, min_lr=0)");
}

}  // namespace tandem::test

#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.h"
#include "layers/dropout.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

Tensor run(Dropout& layer, const Tensor& x, Mode mode, std::uint64_t key) {
    Tape tape;
    Pass pass{test_device(), mode, 0, tape, key};
    return layer.forward(x, pass);
}

TEST(Dropout, RejectsBadProbability) {
    EXPECT_THROW(Dropout(-0.1f), ConfigError);
    EXPECT_THROW(Dropout(1.f), ConfigError);
    EXPECT_THROW(Dropout(std::nanf("")), ConfigError);
    EXPECT_NO_THROW(Dropout(0.f));
    EXPECT_FLOAT_EQ(Dropout(0.25f).p(), 0.25f);
}

TEST(Dropout, GradientTrainContiguous) {
    Dropout drop(0.4f);
    drop.set_name("drop1");
    check_gradients(drop, random_tensor({2, 3, 4, 5}, test_device(), 3), test_device());
}

TEST(Dropout, GradientTrainChannelsLast) {
    Dropout drop(0.4f);
    drop.set_name("drop1");
    GradCheckOptions o;
    o.layout = Layout::channels_last;
    check_gradients(drop,
                    random_tensor({2, 3, 4, 5}, test_device(), 3, -1.f, 1.f, Layout::channels_last),
                    test_device(), o);
}

TEST(Dropout, GradientEval) {
    Dropout drop(0.4f);
    GradCheckOptions o;
    o.mode = Mode::eval;
    check_gradients(drop, random_tensor({3, 7}, test_device(), 4), test_device(), o);
}

TEST(Dropout, EvaluationAndZeroProbabilityAreIdentity) {
    Tensor x = random_tensor({2, 3, 4, 4}, test_device(), 5);
    Dropout drop(0.5f), none(0.f);
    EXPECT_EQ(run(drop, x, Mode::eval, 1).raw(), x.raw());
    EXPECT_EQ(run(none, x, Mode::train, 1).raw(), x.raw());
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 1};
    none.forward(x, pass);
    EXPECT_EQ(none.backward(x, x, pass).raw(), x.raw());
    EXPECT_TRUE(tape.empty()) << "p = 0 keeps no mask";
}

TEST(Dropout, KeepRateAndScale) {
    const float p = 0.3f;
    Dropout drop(p);
    drop.set_name("drop1");
    Tensor x = random_tensor({50, 2000}, test_device(), 6, 0.5f, 1.5f);
    const auto xv = x.to_vector();
    const auto yv = run(drop, x, Mode::train, 42).to_vector();
    std::int64_t kept = 0;
    for (std::size_t i = 0; i < yv.size(); ++i) {
        if (yv[i] == 0.f) continue;
        ++kept;
        ASSERT_NEAR(yv[i], xv[i] / (1.f - p), 1e-6f) << "element " << i;
    }
    // 100000 Bernoulli(0.7) draws: the standard deviation of the rate is 0.00145.
    const double rate = double(kept) / double(yv.size());
    EXPECT_NEAR(rate, 1.0 - p, 0.01);
}

TEST(Dropout, MaskIsTheCounterBasedDraw) {
    const float p = 0.5f;
    Dropout drop(p);
    drop.set_name("drop7");
    Tensor x = random_tensor({4, 33}, test_device(), 8, 0.5f, 1.f);
    const auto yv = run(drop, x, Mode::train, 1234).to_vector();
    const std::uint64_t key = rng_key(1234, "drop7");
    for (std::size_t i = 0; i < yv.size(); ++i)
        ASSERT_EQ(yv[i] != 0.f, rng_uniform(key, i) >= p) << "element " << i;
}

TEST(Dropout, MaskIsDeterministicPerKeyAndName) {
    Dropout a(0.5f), b(0.5f), other_name(0.5f);
    a.set_name("drop1");
    b.set_name("drop1");
    other_name.set_name("drop2");
    Tensor x = random_tensor({8, 64}, test_device(), 9, 0.5f, 1.f);
    const auto first = run(a, x, Mode::train, rng_key(7, 0)).to_vector();
    EXPECT_EQ(run(a, x, Mode::train, rng_key(7, 0)).to_vector(), first);
    EXPECT_EQ(run(b, x, Mode::train, rng_key(7, 0)).to_vector(), first)
        << "the mask depends on the name, not the object";
    EXPECT_NE(run(a, x, Mode::train, rng_key(7, 1)).to_vector(), first)
        << "another micro-batch key must draw another mask";
    EXPECT_NE(run(other_name, x, Mode::train, rng_key(7, 0)).to_vector(), first)
        << "another layer must draw another mask";
}

TEST(Dropout, SameMaskInBothLayouts) {
    Dropout drop(0.5f);
    drop.set_name("drop1");
    const Shape shape{2, 5, 3, 4};
    Tensor plain = random_tensor(shape, test_device(), 10, 0.5f, 1.f);
    Tensor nhwc = plain.to_layout(Layout::channels_last);
    EXPECT_EQ(run(drop, plain, Mode::train, 99).to_vector(),
              run(drop, nhwc, Mode::train, 99).to_vector());

    // Backward too: dx in logical order is the same in both layouts.
    Tensor dy = random_tensor(shape, test_device(), 11);
    std::vector<float> dx[2];
    for (int k = 0; k < 2; ++k) {
        const Layout layout = k ? Layout::channels_last : Layout::contiguous;
        Tape tape;
        Pass pass{test_device(), Mode::train, 0, tape, 99};
        Tensor x = plain.to_layout(layout);
        drop.forward(x, pass);
        Tensor g = drop.backward(x, dy.to_layout(layout), pass);
        EXPECT_EQ(g.layout(), layout);
        dx[k] = g.to_vector();
    }
    EXPECT_EQ(dx[0], dx[1]);
}

TEST(Dropout, BackwardWithoutForwardThrows) {
    Dropout drop(0.5f);
    Tensor x = random_tensor({2, 3}, test_device(), 12);
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 1};
    EXPECT_THROW(drop.backward(x, x, pass), Error);
}

}  // namespace
}  // namespace tandem::test

// The recurrent cells' host exp and tanh (rnn_cell_math.h) against the C library's, over the
// whole float range the gates see, with the ends and special values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "device/rnn_cell_math.h"

namespace tandem {
namespace {

// Distance in units in the last place between two finite floats of one sign.
double ulps(float a, float b) {
    return std::fabs(double(a) - double(b)) /
           double(std::nextafter(std::fabs(b), INFINITY) - std::fabs(b));
}

TEST(RnnCellMath, ExpWithinTwoUlpsWhereItNeitherSaturatesNorUnderflows) {
    double worst = 0;
    for (float x = -87.f; x <= 88.f; x += 0.0137f)
        worst = std::max(worst, ulps(rnn_cell::exp_approx(x), std::exp(x)));
    EXPECT_LE(worst, 2.0);
    EXPECT_EQ(rnn_cell::exp_approx(0.f), 1.f);
}

TEST(RnnCellMath, ExpSaturatesAtTheEndsAndKeepsNaN) {
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_GT(rnn_cell::exp_approx(1000.f), 1e38f);
    EXPECT_TRUE(std::isfinite(rnn_cell::exp_approx(inf)));
    EXPECT_LT(rnn_cell::exp_approx(-1000.f), 1e-37f);
    EXPECT_GE(rnn_cell::exp_approx(-inf), 0.f);
    EXPECT_TRUE(std::isnan(rnn_cell::exp_approx(std::nanf(""))));
    // The gates' sigmoid at the ends: 1 and 0 as near as a float tells.
    EXPECT_EQ(rnn_cell::sigmoid(100.f), 1.f);
    EXPECT_LT(rnn_cell::sigmoid(-100.f), 1e-37f);
}

TEST(RnnCellMath, TanhWithinFourUlpsAndOddAndSaturated) {
    double worst = 0;
    for (float x = -12.f; x <= 12.f; x += 0.00731f) {
        if (std::fabs(x) < 1e-30f) continue;
        worst = std::max(worst, ulps(rnn_cell::tanh_approx(x), std::tanh(x)));
        EXPECT_EQ(rnn_cell::tanh_approx(-x), -rnn_cell::tanh_approx(x));
    }
    EXPECT_LE(worst, 4.0);
    // Small arguments keep their digits (1 - 2 / (e^2x + 1) would lose them).
    for (float x : {1e-3f, 3e-5f, 1e-8f, 1e-30f})
        EXPECT_LE(ulps(rnn_cell::tanh_approx(x), std::tanh(x)), 2.0) << x;
    EXPECT_EQ(rnn_cell::tanh_approx(0.f), 0.f);
    EXPECT_EQ(rnn_cell::tanh_approx(50.f), 1.f);
    EXPECT_EQ(rnn_cell::tanh_approx(-std::numeric_limits<float>::infinity()), -1.f);
    EXPECT_TRUE(std::isnan(rnn_cell::tanh_approx(std::nanf(""))));
}

}  // namespace
}  // namespace tandem

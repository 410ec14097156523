#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "base/error.h"
#include "device/cpu/reference/rounded_operands.h"
#include "device/precision.h"
#include "kernels/registry.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

// bfloat16 keeps 8 bits of mantissa (7 stored): 1 + 2^-7 is the next value after 1.
TEST(Precision, RoundsToTheNearestBfloat16TiesToEven) {
    EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
    EXPECT_EQ(round_to_bf16(1.0f + 0x1p-7f), 1.0f + 0x1p-7f);             // representable
    EXPECT_EQ(round_to_bf16(1.0f + 0x1p-9f), 1.0f);                       // below half: down
    EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);  // above half: up
    EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f), 1.0f);                       // a tie: to the even 1
    EXPECT_EQ(round_to_bf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);  // a tie: to the even one up
    EXPECT_EQ(round_to_bf16(-3.0f - 0x1p-9f), -3.0f);              // sign kept
    EXPECT_EQ(round_to_bf16(2.0f - 0x1p-10f), 2.0f);               // carry into the exponent
    EXPECT_EQ(round_to_bf16(0x1p-130f), 0x1p-130f);                // a bfloat16 subnormal
    EXPECT_EQ(round_to_bf16(0x1p-140f), 0.0f);                     // below its smallest, 2^-133
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(round_to_bf16(inf), inf);
    EXPECT_EQ(round_to_bf16(-inf), -inf);
    EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
    // float32's largest value lies past the largest bfloat16 by more than half a step.
    EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::max()), inf);
}

// IEEE half keeps 11 bits of mantissa (10 stored): 1 + 2^-10 is the next value after 1. Below
// 2^-14 it counts in steps of 2^-24 (its subnormals); 65504 is its largest value.
TEST(Precision, RoundsToTheNearestHalfTiesToEven) {
    EXPECT_EQ(round_to_fp16(1.0f), 1.0f);
    EXPECT_EQ(round_to_fp16(1.0f + 0x1p-10f), 1.0f + 0x1p-10f);             // representable
    EXPECT_EQ(round_to_fp16(1.0f + 0x1p-12f), 1.0f);                        // below half: down
    EXPECT_EQ(round_to_fp16(1.0f + 0x1p-11f + 0x1p-20f), 1.0f + 0x1p-10f);  // above half: up
    EXPECT_EQ(round_to_fp16(1.0f + 0x1p-11f), 1.0f);                        // a tie: to the even 1
    EXPECT_EQ(round_to_fp16(1.0f + 3 * 0x1p-11f), 1.0f + 0x1p-9f);  // a tie: to the even one up
    EXPECT_EQ(round_to_fp16(-3.0f - 0x1p-12f), -3.0f);              // sign kept
    EXPECT_EQ(round_to_fp16(2.0f - 0x1p-13f), 2.0f);                // carry into the exponent
    EXPECT_EQ(round_to_fp16(0x1p-14f), 0x1p-14f);                   // the smallest normal half
    EXPECT_EQ(round_to_fp16(0x1p-14f - 0x1p-26f), 0x1p-14f);        // a subnormal rounding up to it
    EXPECT_EQ(round_to_fp16(0x1p-20f + 0x1p-24f), 0x1p-20f + 0x1p-24f);  // subnormals: exact
    EXPECT_EQ(round_to_fp16(0x1p-20f + 0x1p-26f), 0x1p-20f);             // ... or to a step
    EXPECT_EQ(round_to_fp16(0x1p-24f), 0x1p-24f);                        // the smallest subnormal
    EXPECT_EQ(round_to_fp16(3 * 0x1p-25f), 2 * 0x1p-24f);                // 1.5 steps: to even 2
    EXPECT_EQ(round_to_fp16(5 * 0x1p-25f), 2 * 0x1p-24f);                // 2.5 steps: to even 2
    EXPECT_EQ(round_to_fp16(-7 * 0x1p-25f), -4 * 0x1p-24f);              // -3.5 steps: to even -4
    EXPECT_EQ(round_to_fp16(0x1p-25f), 0.0f);                            // half a step: to even 0
    EXPECT_EQ(round_to_fp16(0x1p-25f + 0x1p-40f), 0x1p-24f);             // more than half a step
    EXPECT_TRUE(std::signbit(round_to_fp16(-0x1p-30f)));                 // -0, sign kept
    EXPECT_EQ(round_to_fp16(std::numeric_limits<float>::denorm_min()), 0.0f);
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(round_to_fp16(65504.f), 65504.f);
    EXPECT_EQ(round_to_fp16(65519.99f), 65504.f);  // just under half a step above: down
    EXPECT_EQ(round_to_fp16(65520.f), inf);        // a tie, and the even side is past the range
    EXPECT_EQ(round_to_fp16(-65520.f), -inf);
    EXPECT_EQ(round_to_fp16(std::numeric_limits<float>::max()), inf);
    EXPECT_EQ(round_to_fp16(inf), inf);
    EXPECT_EQ(round_to_fp16(-inf), -inf);
    EXPECT_TRUE(std::isnan(round_to_fp16(std::numeric_limits<float>::quiet_NaN())));
}

// round_to takes each precision's rounding; fp32 and tf32 (the CUDA device's option, not a
// layer's precision) leave values as they are.
TEST(Precision, RoundToFollowsThePrecision) {
    for (float x : {1.0f + 0x1p-9f, 1.0f + 0x1p-12f, -70000.f, 0x1p-30f}) {
        EXPECT_EQ(round_to(Precision::fp16, x), round_to_fp16(x)) << x;
        EXPECT_EQ(round_to(Precision::bf16, x), round_to_bf16(x)) << x;
        EXPECT_EQ(round_to(Precision::fp32, x), x) << x;
        EXPECT_EQ(round_to(Precision::tf32, x), x) << x;
    }
    EXPECT_NE(round_to_fp16(1.0f + 0x1p-9f), round_to_bf16(1.0f + 0x1p-9f));
}

// The mixed-precision oracle (rounded_operands.h) reads the activation and the weights rounded
// to its precision and the bias as it is: 1 + 2^-12 is 1 in either 16-bit format, 1 + 2^-9
// a half but no bfloat16, and the bias's 2^-20 is kept.
TEST(Precision, OracleReadsOperandsRoundedToItsPrecision) {
    const LinearConfig config{1, 2, 1, true};
    const Tensor x =
        Tensor::from_vector({1, 2}, test_device(), std::vector<float>{1.0f + 0x1p-12f, 3.0f});
    const Tensor w =
        Tensor::from_vector({1, 2}, test_device(), std::vector<float>{1.0f, 1.0f + 0x1p-9f});
    const Tensor b = Tensor::from_vector({1}, test_device(), std::vector<float>{1.0f + 0x1p-20f});
    const auto forward = [&](Precision precision) {
        auto k = cpu::in_precision<LinearKernel>(
            KernelRegistry::instance().make<LinearKernel>(test_device(), config, "reference"),
            precision);
        Tensor y = Tensor::empty({1, 1}, test_device());
        k->forward(x, w, b, y);
        return y.to_vector()[0];
    };
    EXPECT_EQ(forward(Precision::fp32), 5.0f + 0x1p-12f + 3 * 0x1p-9f + 0x1p-20f);
    EXPECT_EQ(forward(Precision::fp16), 5.0f + 3 * 0x1p-9f + 0x1p-20f);
    EXPECT_EQ(forward(Precision::bf16), 5.0f + 0x1p-20f);
}

TEST(Precision, NamesReadBackAndUnknownOnesListTheChoices) {
    for (const auto& p : kPrecisionNames)
        EXPECT_EQ(parse_precision(precision_name(p.value)), p.value);
    try {
        parse_precision("half");
        ADD_FAILURE() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_STREQ(e.what(), "unknown precision 'half' (known: fp32, tf32, fp16, bf16)");
    }
}

}  // namespace
}  // namespace tandem::test

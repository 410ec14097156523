#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/error.h"
#include "device/precision.h"

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

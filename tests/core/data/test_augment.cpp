#include <gtest/gtest.h>

#include "data/augment.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

Tensor ramp(std::int64_t n) {
    std::vector<float> v(static_cast<std::size_t>(n * 2 * 5 * 6));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i % 30) + 1;
    return Tensor::from_vector({n, 2, 5, 6}, host_device(), v);
}

TEST(Augment, FlipMirrorsRows) {
    Tensor x = ramp(64);
    std::vector<std::int64_t> ids(64);
    for (int i = 0; i < 64; ++i) ids[i] = i;
    augment_batch(x, ids, {true, 0, 0.f}, 7, 1);
    const auto v = x.to_vector();
    int flipped = 0;
    for (int n = 0; n < 64; ++n) {
        const float* p = v.data() + n * 60;
        const bool is_flipped = p[0] == 6.f;
        EXPECT_TRUE(is_flipped || p[0] == 1.f);
        flipped += is_flipped;
        for (int x0 = 0; x0 < 6; ++x0) EXPECT_EQ(p[x0], is_flipped ? 6.f - x0 : 1.f + x0);
    }
    EXPECT_GT(flipped, 16);
    EXPECT_LT(flipped, 48);
}

TEST(Augment, DependsOnlyOnSeedEpochAndSample) {
    std::vector<std::int64_t> ids{5, 9, 3};
    Tensor a = ramp(3), b = ramp(3), c = ramp(3);
    augment_batch(a, ids, {true, 2, -1.f}, 7, 1);
    augment_batch(b, ids, {true, 2, -1.f}, 7, 1);
    augment_batch(c, ids, {true, 2, -1.f}, 7, 2);
    EXPECT_EQ(a.to_vector(), b.to_vector());
    EXPECT_NE(a.to_vector(), c.to_vector());
    // Sample 9 alone gets the same pixels as inside the batch.
    Tensor one = ramp(1);
    std::vector<std::int64_t> only{9};
    augment_batch(one, only, {true, 2, -1.f}, 7, 1);
    const auto va = a.to_vector(), vo = one.to_vector();
    EXPECT_TRUE(std::equal(vo.begin(), vo.end(), va.begin() + 60));
}

TEST(Augment, CropShiftsAndFills) {
    Tensor x = ramp(32);
    std::vector<std::int64_t> ids(32);
    for (int i = 0; i < 32; ++i) ids[i] = 100 + i;
    augment_batch(x, ids, {false, 1, -1.f}, 3, 0);
    const auto v = x.to_vector();
    int filled = 0;
    for (float f : v) filled += f == -1.f;
    EXPECT_GT(filled, 0);
    EXPECT_THROW(augment_batch(x, ids, {false, 5, 0.f}, 3, 0), ConfigError);
}

}  // namespace
}  // namespace tandem::test

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "layers/init.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

struct Moments {
    double mean = 0, std = 0, max_abs = 0;
};

Moments moments(const std::vector<float>& v) {
    Moments m;
    for (float x : v) m.mean += x;
    m.mean /= static_cast<double>(v.size());
    for (float x : v) {
        m.std += (x - m.mean) * (x - m.mean);
        m.max_abs = std::max(m.max_abs, std::fabs(double(x)));
    }
    m.std = std::sqrt(m.std / static_cast<double>(v.size()));
    return m;
}

// 200k draws: the sample std is within ~0.2% of the true one, the mean within ~0.3% of std.
constexpr std::int64_t kDraws = 200000;

Moments draw(std::string_view scheme, std::int64_t fan_in, std::int64_t fan_out) {
    Tensor t = Tensor::empty({kDraws}, test_device());
    init_tensor(t, scheme, fan_in, fan_out, 42);
    return moments(t.to_vector());
}

TEST(Init, KaimingNormalStatistics) {
    const Moments m = draw("kaiming", 50, 7);
    const double std = std::sqrt(2.0 / 50);
    EXPECT_NEAR(m.mean, 0.0, 0.01 * std);
    EXPECT_NEAR(m.std, std, 0.01 * std);
    EXPECT_GT(m.max_abs, 3.5 * std);  // a normal has tails; a uniform of this std would not
}

TEST(Init, KaimingUniformStatistics) {
    const Moments m = draw("kaiming_uniform", 50, 7);
    const double bound = std::sqrt(6.0 / 50);
    EXPECT_NEAR(m.mean, 0.0, 0.01 * bound);
    EXPECT_NEAR(m.std, bound / std::sqrt(3.0), 0.01 * bound);
    EXPECT_LE(m.max_abs, bound);
    EXPECT_GT(m.max_abs, 0.999 * bound);
}

TEST(Init, XavierUniformStatistics) {
    const Moments m = draw("xavier", 30, 90);
    const double bound = std::sqrt(6.0 / 120);
    EXPECT_NEAR(m.mean, 0.0, 0.01 * bound);
    EXPECT_NEAR(m.std, bound / std::sqrt(3.0), 0.01 * bound);
    EXPECT_LE(m.max_abs, bound);
    EXPECT_GT(m.max_abs, 0.999 * bound);
}

TEST(Init, XavierNormalStatistics) {
    const Moments m = draw("xavier_normal", 30, 90);
    const double std = std::sqrt(2.0 / 120);
    EXPECT_NEAR(m.mean, 0.0, 0.01 * std);
    EXPECT_NEAR(m.std, std, 0.01 * std);
}

TEST(Init, Zeros) {
    Tensor t = Tensor::empty({100}, test_device());
    t.fill(3.f);
    init_tensor(t, "zeros", 0, 0, 1);
    for (float v : t.to_vector()) ASSERT_EQ(v, 0.f);
}

TEST(Init, SameSeedSameValuesOtherSeedOther) {
    Tensor a = Tensor::empty({4, 3, 3, 3}, test_device());
    Tensor b = Tensor::empty({4, 3, 3, 3}, test_device());
    Tensor c = Tensor::empty({4, 3, 3, 3}, test_device());
    init_tensor(a, "kaiming", 27, 36, 7);
    init_tensor(b, "kaiming", 27, 36, 7);
    init_tensor(c, "kaiming", 27, 36, 8);
    EXPECT_EQ(a.to_vector(), b.to_vector());
    const auto va = a.to_vector(), vc = c.to_vector();
    int same = 0;
    for (std::size_t i = 0; i < va.size(); ++i) same += va[i] == vc[i];
    EXPECT_EQ(same, 0);
}

TEST(Init, ValuesFollowLogicalOrderWhateverTheLayout) {
    Tensor a = Tensor::empty({2, 3, 4, 5}, test_device());
    Tensor b = Tensor::empty({2, 3, 4, 5}, test_device(), DType::f32, Layout::channels_last);
    init_tensor(a, "xavier", 60, 40, 3);
    init_tensor(b, "xavier", 60, 40, 3);
    EXPECT_EQ(a.to_vector(), b.to_vector());
}

TEST(Init, UnknownSchemeListsTheKnownOnes) {
    Tensor t = Tensor::empty({10}, test_device());
    try {
        init_tensor(t, "he", 3, 3, 1);
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("'he'"), std::string::npos) << msg;
        for (const auto& name : init_schemes()) EXPECT_NE(msg.find(name), std::string::npos) << msg;
    }
}

TEST(Init, NonPositiveFanIsConfigError) {
    Tensor t = Tensor::empty({10}, test_device());
    EXPECT_THROW(init_tensor(t, "kaiming", 0, 3, 1), ConfigError);
    EXPECT_THROW(init_tensor(t, "xavier", 3, 0, 1), ConfigError);
}

TEST(Init, SchemeNames) {
    EXPECT_TRUE(is_init_scheme("kaiming"));
    EXPECT_TRUE(is_init_scheme("kaiming_uniform"));
    EXPECT_TRUE(is_init_scheme("xavier"));
    EXPECT_TRUE(is_init_scheme("xavier_normal"));
    EXPECT_TRUE(is_init_scheme("zeros"));
    EXPECT_FALSE(is_init_scheme("Kaiming"));
    EXPECT_FALSE(is_init_scheme(""));
    EXPECT_EQ(init_schemes().size(), 5u);
}

}  // namespace
}  // namespace tandem::test

#include "support/close.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace tandem::test {

void expect_close(const std::vector<float>& a, const std::vector<float>& b, double rtol,
                  const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (std::size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], b[i], rtol * std::max(1.0, std::fabs(double(b[i]))))
            << what << " [" << i << "]";
}

void expect_close_to_scale(const Tensor& actual, const Tensor& expected, const std::string& what) {
    const auto a = actual.to_vector(), b = expected.to_vector();
    ASSERT_EQ(a.size(), b.size()) << what;
    double scale = 1;
    for (float v : b) scale = std::max(scale, std::fabs(double(v)));
    for (std::size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], b[i], 1e-4 * scale)
            << what << " [" << i << "] of " << expected.description();
}

}  // namespace tandem::test

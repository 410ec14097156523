#include <gtest/gtest.h>

#include "layers/conv2d.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "layers/sequential.h"

namespace tandem {
namespace {

TEST(Flops, ConvAndLinearCountMultiplyAddsTwice) {
    Conv2dOptions c;
    c.in_channels = 4, c.out_channels = 8, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1,
    c.groups = 2;
    Conv2d conv(c);
    // 2 x 8 x 5 x 5 outputs, each summing (4 / 2) x 3 x 3 products.
    EXPECT_DOUBLE_EQ(conv.forward_flops({2, 4, 5, 5}), 2.0 * (2 * 8 * 5 * 5) * (2 * 9));
    Linear fc(LinearOptions{10, 3, true, "kaiming"});
    EXPECT_DOUBLE_EQ(fc.forward_flops({6, 10}), 2.0 * 6 * 3 * 10);
    EXPECT_DOUBLE_EQ(ReLU().forward_flops({6, 10}), 0.0);
}

TEST(Flops, SequentialSumsAlongTheShapes) {
    Conv2dOptions c;
    c.in_channels = 1, c.out_channels = 2, c.kernel_h = c.kernel_w = 3;
    auto conv = std::make_shared<Conv2d>(c);
    Sequential net({conv, std::make_shared<ReLU>()});
    EXPECT_DOUBLE_EQ(net.forward_flops({1, 1, 5, 5}), conv->forward_flops({1, 1, 5, 5}));
    EXPECT_DOUBLE_EQ(net.forward_flops({1, 1, 5, 5}), 2.0 * (2 * 3 * 3) * 9);
}

}  // namespace
}  // namespace tandem

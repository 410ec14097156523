#include <gtest/gtest.h>

#include "support/grad_check.h"
#include "tensor/tensor.h"

namespace tandem::test {
namespace {

TEST(Tensor, LayoutsKeepLogicalOrder) {
    std::vector<float> v(2 * 3 * 4 * 5);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i);
    Tensor nchw = Tensor::from_vector({2, 3, 4, 5}, test_device(), v);
    Tensor nhwc = nchw.to_layout(Layout::channels_last);
    EXPECT_EQ(nhwc.layout(), Layout::channels_last);
    EXPECT_EQ(nhwc.to_vector(), v);
    // Element (n=1, c=2, h=3, w=4) lies at ((1*4 + 3)*5 + 4)*3 + 2 in NHWC storage.
    EXPECT_EQ(nhwc.data<float>()[((1 * 4 + 3) * 5 + 4) * 3 + 2], v[((1 * 3 + 2) * 4 + 3) * 5 + 4]);
    EXPECT_EQ(nhwc.to_layout(Layout::contiguous).to_vector(), v);
}

TEST(Tensor, ReshapeChecksCountAndLayout) {
    Tensor t = Tensor::zeros({2, 3, 4, 5}, test_device());
    EXPECT_EQ(t.reshape({2, 60}).shape(), (Shape{2, 60}));
    EXPECT_THROW(t.reshape({7, 7}), ShapeError);
    EXPECT_THROW(t.to_layout(Layout::channels_last).reshape({2, 60}), ShapeError);
}

TEST(Tensor, DescriptionAndTypeChecks) {
    Tensor t = Tensor::zeros({8, 3}, test_device());
    EXPECT_EQ(t.description(), "Tensor(8x3, f32, cpu:0)");
    EXPECT_THROW(t.data<int>(), Error);
    EXPECT_THROW(Tensor::empty({2, -1}, test_device()), ShapeError);
}

}  // namespace
}  // namespace tandem::test

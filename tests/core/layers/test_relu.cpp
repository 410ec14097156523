#include <gtest/gtest.h>

#include "layers/relu.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

// Inputs away from the kink at 0: |x| in [0.1, 1].
Tensor relu_away_from_zero(const Shape& shape, Layout layout) {
    Tensor x = random_tensor(shape, test_device(), 5, 0.1f, 1.f);
    auto v = x.to_vector();
    for (std::size_t i = 0; i < v.size(); i += 2) v[i] = -v[i];
    return Tensor::from_vector(shape, test_device(), v, layout);
}

TEST(ReLU, GradientContiguous) {
    ReLU relu;
    relu.set_name("relu1");
    check_gradients(relu, relu_away_from_zero({2, 3, 4, 5}, Layout::contiguous), test_device());
}

TEST(ReLU, GradientChannelsLast) {
    ReLU relu;
    relu.set_name("relu1");
    GradCheckOptions o;
    o.layout = Layout::channels_last;
    check_gradients(relu, relu_away_from_zero({2, 3, 4, 5}, Layout::channels_last), test_device(),
                    o);
}

TEST(ReLU, DnnlMatchesReference) {
    ReLU fast, ref;
    ref.set_kernel_impl("reference");
    Tensor x = random_tensor({4, 7}, test_device(), 9);
    Tape t1, t2;
    Pass p1{test_device(), Mode::train, 0, t1, 0}, p2{test_device(), Mode::train, 0, t2, 0};
    EXPECT_EQ(fast.forward(x, p1).to_vector(), ref.forward(x, p2).to_vector());
    Tensor dy = random_tensor({4, 7}, test_device(), 10);
    EXPECT_EQ(fast.backward(x, dy, p1).to_vector(), ref.backward(x, dy, p2).to_vector());
}

}  // namespace
}  // namespace tandem::test

#include <gtest/gtest.h>

#include "layers/flatten.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

TEST(Flatten, OutputShape) {
    Flatten f;
    EXPECT_EQ(f.output_shape({8, 3, 4, 5}), Shape({8, 60}));
    EXPECT_EQ(f.output_shape({8, 3, 4}), Shape({8, 12}));
    EXPECT_EQ(f.output_shape({8, 10}), Shape({8, 10}));
    EXPECT_EQ(f.output_shape({0, 3, 2}), Shape({0, 6}));
}

TEST(Flatten, RankBelowTwoIsAShapeError) {
    Flatten f;
    f.set_name("flatten1");
    try {
        f.output_shape({12});
        FAIL() << "expected a ShapeError";
    } catch (const ShapeError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("'flatten1' (Flatten)"), std::string::npos) << what;
        EXPECT_NE(what.find("12"), std::string::npos) << what;
    }
}

TEST(Flatten, ContiguousIsAViewInPyTorchOrder) {
    Flatten f;
    Tensor x = random_tensor({2, 3, 2, 2}, test_device(), 1);
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    Tensor y = f.forward(x, pass);
    EXPECT_EQ(y.shape(), Shape({2, 12}));
    EXPECT_EQ(y.raw(), x.raw());
    EXPECT_EQ(y.to_vector(), x.to_vector());
}

TEST(Flatten, ChannelsLastFlattensLikeContiguous) {
    Flatten f;
    Tensor plain = random_tensor({2, 3, 4, 5}, test_device(), 2);
    Tensor nhwc = plain.to_layout(Layout::channels_last);
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    Tensor y = f.forward(nhwc, pass);
    EXPECT_EQ(y.layout(), Layout::contiguous);
    EXPECT_EQ(y.shape(), Shape({2, 60}));
    EXPECT_EQ(y.to_vector(), f.forward(plain, pass).to_vector());

    Tensor dy = random_tensor({2, 60}, test_device(), 3);
    Tensor dx = f.backward(nhwc, dy, pass);
    EXPECT_EQ(dx.layout(), Layout::channels_last);
    EXPECT_EQ(dx.shape(), nhwc.shape());
    EXPECT_EQ(dx.to_vector(), dy.to_vector());
}

TEST(Flatten, GradientBothLayouts) {
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        Flatten f;
        f.set_name("flatten1");
        GradCheckOptions o;
        o.layout = layout;
        check_gradients(f, random_tensor({2, 3, 4, 2}, test_device(), 4, -1.f, 1.f, layout),
                        test_device(), o);
    }
}

TEST(Flatten, BackwardRejectsAWrongGradient) {
    Flatten f;
    Tensor x = random_tensor({2, 3, 2, 2}, test_device(), 5);
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    EXPECT_THROW(f.backward(x, random_tensor({2, 11}, test_device(), 6), pass), ShapeError);
}

}  // namespace
}  // namespace tandem::test

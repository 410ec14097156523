#include <gtest/gtest.h>

#include <cmath>

#include "layers/lrn.h"
#include "support/close.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

// A strong normalisation (large alpha), so the gradient differs visibly from the identity's.
const LrnOptions kStrong{3, 0.8f, 0.75f, 1.5f};

TEST(LRN, Gradients) {
    for (Mode mode : {Mode::train, Mode::eval})
        for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
            SCOPED_TRACE(std::string(mode == Mode::train ? "train" : "eval") +
                         (layout == Layout::contiguous ? " NCHW" : " NHWC"));
            LRN lrn(kStrong);
            lrn.set_name("norm1");
            GradCheckOptions o;
            o.mode = mode;
            o.layout = layout;
            o.eps = 5e-3f;
            o.max_elements = 80;
            check_gradients(lrn, random_tensor({2, 6, 3, 3}, test_device(), 4, -1.5f, 1.5f, layout),
                            test_device(), o);
        }
}

// PyTorch's LocalResponseNorm written out for one element: window c-size/2 .. c+(size-1)/2,
// clipped, alpha divided by size.
TEST(LRN, MatchesDefinition) {
    const LrnOptions o{5, 0.5f, 0.75f, 2.f};
    const Shape shape{1, 7, 2, 2};
    Tensor x = random_tensor(shape, test_device(), 6, -2.f, 2.f);
    const auto v = x.to_vector();
    for (const std::string impl : {"dnnl", "reference"}) {
        LRN lrn(o);
        lrn.set_kernel_impl(impl);
        Tape tape;
        Pass pass{test_device(), Mode::eval, 0, tape, 0};
        const auto y = lrn.forward(x, pass).to_vector();
        for (std::int64_t c = 0; c < 7; ++c)
            for (std::int64_t p = 0; p < 4; ++p) {
                double sum = 0;
                for (std::int64_t j = std::max<std::int64_t>(c - 2, 0);
                     j <= std::min<std::int64_t>(c + 2, 6); ++j)
                    sum += double(v[std::size_t(j * 4 + p)]) * v[std::size_t(j * 4 + p)];
                const double want = v[std::size_t(c * 4 + p)] / std::pow(2.0 + 0.5 / 5 * sum, 0.75);
                EXPECT_NEAR(y[std::size_t(c * 4 + p)], want, 1e-5) << impl << " c " << c;
            }
    }
}

TEST(LRN, DnnlMatchesReference) {
    const LrnOptions options[] = {{}, kStrong, {5, 0.3f, 0.5f, 1.f}, {1, 0.5f, 1.f, 1.f}};
    // 32 channels also make oneDNN pick a JIT forward for NCHW with its reference backward.
    for (const Shape& shape : {Shape{2, 9, 5, 4}, Shape{1, 32, 3, 3}})
        for (const auto& o : options)
            for (Mode mode : {Mode::train, Mode::eval})
                for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
                    const std::string what = shape.to_string() + " size " + std::to_string(o.size) +
                                             " alpha " + std::to_string(o.alpha) +
                                             (mode == Mode::train ? " train" : " eval") +
                                             (layout == Layout::contiguous ? " NCHW" : " NHWC");
                    LRN fast(o), ref(o);
                    ref.set_kernel_impl("reference");
                    Tensor x = random_tensor(shape, test_device(), 13, -2.f, 2.f, layout);
                    Tensor dy = random_tensor(shape, test_device(), 14, -1.f, 1.f, layout);
                    Tape t1, t2;
                    Pass p1{test_device(), mode, 0, t1, 0}, p2{test_device(), mode, 0, t2, 0};
                    Tensor y1 = fast.forward(x, p1);
                    EXPECT_EQ(y1.layout(), layout) << what;
                    expect_close(y1.to_vector(), ref.forward(x, p2).to_vector(), 1e-4, what + " y");
                    expect_close(fast.backward(x, dy, p1).to_vector(),
                                 ref.backward(x, dy, p2).to_vector(), 1e-4, what + " dx");
                }
}

TEST(LRN, OptionErrors) {
    EXPECT_THROW(LRN({0}), ConfigError);
    EXPECT_THROW(LRN({4}), ConfigError);  // even: no centred window
    EXPECT_THROW(LRN({5, -1e-4f}), ConfigError);
    EXPECT_THROW(LRN({5, 1e-4f, -0.75f}), ConfigError);
    EXPECT_THROW(LRN({5, 1e-4f, 0.75f, 0.f}), ConfigError);
    EXPECT_NO_THROW(LRN(LrnOptions{}));
    EXPECT_EQ(LRN(LrnOptions{}).options_text(), "size 5, alpha 0.0001, beta 0.75, k 1");
}

TEST(LRN, ShapeErrorsNameLayerAndShapes) {
    LRN lrn;
    lrn.set_name("norm2");
    try {
        lrn.output_shape({8, 16});
        FAIL() << "expected ShapeError";
    } catch (const ShapeError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("norm2"), std::string::npos) << msg;
        EXPECT_NE(msg.find("8x16"), std::string::npos) << msg;
        EXPECT_NE(msg.find("N x C x H x W"), std::string::npos) << msg;
    }
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    Tensor x = Tensor::zeros({1, 3, 2, 2}, test_device());
    lrn.forward(x, pass);
    EXPECT_THROW(lrn.backward(x, Tensor::zeros({1, 3, 2, 1}, test_device()), pass), ShapeError);
}

}  // namespace
}  // namespace tandem::test

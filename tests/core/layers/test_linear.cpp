#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "layers/linear.h"
#include "support/close.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

LinearOptions linear_options(std::int64_t in, std::int64_t out, bool bias = true) {
    LinearOptions o;
    o.in_features = in, o.out_features = out, o.bias = bias;
    return o;
}

void randomise_linear(Linear& fc, std::uint64_t seed) {
    fc.initialize(seed);
    for (auto* p : fc.parameters())
        if (p->name == "bias")
            p->value.copy_from(random_tensor(p->value.shape(), host_device(), seed));
}

TEST(Linear, Gradient) {
    Linear fc(linear_options(7, 5));
    fc.set_name("fc1");
    randomise_linear(fc, 2);
    check_gradients(fc, random_tensor({3, 7}, test_device(), 4), test_device());
}

TEST(Linear, GradientNoBias) {
    Linear fc(linear_options(6, 4, false));
    fc.set_name("fc1");
    fc.initialize(3);
    check_gradients(fc, random_tensor({2, 6}, test_device(), 5), test_device());
}

// Same weights and the same non-zero starting gradients on both kernels, so the ADD contract
// is compared too.
void compare_linear_with_reference(std::int64_t n, std::int64_t in, std::int64_t out, bool bias,
                                   Precision precision = Precision::fp32) {
    SCOPED_TRACE("n " + std::to_string(n) + ", " + std::to_string(in) + "->" + std::to_string(out) +
                 (bias ? "" : ", no bias") + " " + std::string(precision_name(precision)));
    Linear fast(linear_options(in, out, bias)), ref(linear_options(in, out, bias));
    ref.set_kernel_impl("reference");
    fast.set_precision(precision), ref.set_precision(precision);
    for (Linear* fc : {&fast, &ref}) {
        randomise_linear(*fc, 5);
        for (auto* p : fc->parameters())
            p->grad.copy_from(random_tensor(p->grad.shape(), host_device(), 6));
    }
    Tensor x = random_tensor({n, in}, test_device(), 7);
    Tensor dy = random_tensor({n, out}, test_device(), 8);
    Tape t1, t2;
    Pass p1{test_device(), Mode::train, 0, t1, 0}, p2{test_device(), Mode::train, 0, t2, 0};
    expect_close_to_scale(fast.forward(x, p1), ref.forward(x, p2), "y");
    expect_close_to_scale(fast.backward(x, dy, p1), ref.backward(x, dy, p2), "dx");
    for (std::size_t i = 0; i < fast.parameters().size(); ++i)
        expect_close_to_scale(fast.parameters()[i]->grad, ref.parameters()[i]->grad,
                              "d" + fast.parameters()[i]->name);
    fast.initialize(9), ref.initialize(9);
    expect_close_to_scale(fast.forward(x, p1), ref.forward(x, p2), "y after new weights");
}

TEST(Linear, DnnlMatchesReference) {
    compare_linear_with_reference(1, 10, 3, true);
    compare_linear_with_reference(5, 37, 13, true);
    compare_linear_with_reference(8, 300, 100, false);
    compare_linear_with_reference(16, 64, 10, true);
}

// bf16 (device/precision.h): oneDNN's products of bfloat16 copies against the reference fed the
// same rounded operands; odd sizes leave the copies an odd number of elements.
TEST(Linear, Bf16MatchesRoundedReference) {
    const std::string why = test_device().precision_unavailable(Precision::bf16);
    if (!why.empty()) GTEST_SKIP() << "no bf16 kernels on " << test_device().name() << ": " << why;
    compare_linear_with_reference(1, 10, 3, true, Precision::bf16);
    compare_linear_with_reference(5, 37, 13, true, Precision::bf16);
    compare_linear_with_reference(8, 300, 100, false, Precision::bf16);
    compare_linear_with_reference(64, 800, 500, true, Precision::bf16);
}

std::string linear_shape_error(Linear& fc, const Shape& input) {
    try {
        fc.output_shape(input);
    } catch (const ShapeError& e) {
        return e.what();
    }
    ADD_FAILURE() << "no ShapeError for input " << input.to_string();
    return {};
}

TEST(Linear, ShapeErrorsNameLayerAndShapes) {
    Linear fc(linear_options(3136, 256));
    fc.set_name("fc1");
    const std::string image = linear_shape_error(fc, {8, 64, 7, 7});
    EXPECT_NE(image.find("fc1"), std::string::npos) << image;
    EXPECT_NE(image.find("8x64x7x7"), std::string::npos) << image;
    EXPECT_NE(image.find("Flatten"), std::string::npos) << image;
    EXPECT_EQ(linear_shape_error(fc, {8, 100}),
              "Linear 'fc1': input has 100 features, weight expects 3136 (input 8x100, weight "
              "256x3136)");
    const std::string rank = linear_shape_error(fc, {8, 2, 3136});
    EXPECT_NE(rank.find("8x2x3136"), std::string::npos) << rank;
    EXPECT_EQ(fc.output_shape({8, 3136}), (Shape{8, 256}));

    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    Linear small(linear_options(4, 3));
    Tensor x = random_tensor({2, 4}, test_device(), 1);
    EXPECT_THROW(small.backward(x, random_tensor({2, 4}, test_device(), 2), pass), ShapeError);
}

TEST(Linear, BadOptionsAreConfigErrors) {
    EXPECT_THROW(Linear(linear_options(0, 3)), ConfigError);
    EXPECT_THROW(Linear(linear_options(3, -2)), ConfigError);
    LinearOptions o = linear_options(3, 2);
    o.init = "glorot";
    try {
        Linear fc(o);
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("xavier"), std::string::npos) << e.what();
    }
}

TEST(Linear, ParametersOptionsTextAndEstimate) {
    Linear fc(linear_options(3136, 256));
    EXPECT_EQ(fc.options_text(), "3136->256");
    EXPECT_EQ(Linear(linear_options(4, 2, false)).options_text(), "4->2, no bias");
    auto params = fc.parameters();
    ASSERT_EQ(params.size(), 2u);
    EXPECT_EQ(params[0]->value.shape(), (Shape{256, 3136}));
    EXPECT_TRUE(params[0]->decay);
    EXPECT_EQ(params[1]->value.shape(), (Shape{256}));
    EXPECT_FALSE(params[1]->decay);
    EXPECT_EQ(Linear(linear_options(4, 2, false)).parameters().size(), 1u);
    const MemoryEstimate e = fc.memory_estimate({8, 3136});
    EXPECT_EQ(e.parameter_bytes, (256 * 3136 + 256) * sizeof(float));
    EXPECT_EQ(e.output_bytes, 8 * 256 * sizeof(float));
}

}  // namespace
}  // namespace tandem::test

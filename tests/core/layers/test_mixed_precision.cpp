// bf16 against PyTorch's CPU autocast (tests/torch/cases_mixed_precision.py): the same layers
// on the same inputs give what PyTorch gives, to the bfloat16 rounding of PyTorch's results
// (autocast hands back bf16 outputs and gradients; Tandem writes float32).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "layers/conv2d.h"
#include "layers/linear.h"
#include "support/grad_check.h"
#include "support/torch_fixture.h"

namespace tandem::test {
namespace {

// |// | within one bfloat16 step of |theirs| (its rounding to nearest is half a
// step; float32 sums in another order add little), plus 1e-4 of the largest |theirs| and
// `extra`.
void expect_within_bf16(const Tensor& ours, const Tensor& theirs, const std::string& what,
                        double extra = 0) {
    const auto a = ours.to_vector(), b = theirs.to_vector();
    ASSERT_EQ(a.size(), b.size()) << what;
    double scale = 0;
    for (float v : b) scale = std::max(scale, std::fabs(double(v)));
    for (std::size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], b[i], 0x1p-8 * std::fabs(double(b[i])) + 1e-4 * scale + extra)
            << what << " [" << i << "]";
}

// Runs `layer` in bf16 on the fixture's input and gradient, from its weights.
void check_against_fixture(Layer& layer, const std::string& name) {
    const std::string why = test_device().precision_unavailable(Precision::bf16);
    if (!why.empty()) GTEST_SKIP() << "no bf16 kernels on " << test_device().name() << ": " << why;
    SCOPED_TRACE(name);
    const TorchFixture f(name);
    layer.set_precision(Precision::bf16);
    for (auto* p : layer.parameters()) {
        p->value.copy_from(f[p->name]);
        p->grad.fill(0.f);
    }
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    // PyTorch rounds the bias to bfloat16 as well (half a step of it at most); Tandem adds it
    // in float32, as oneDNN's bf16 kernels allow.
    double bias = 0;
    for (float v : f["bias"].to_vector()) bias = std::max(bias, std::fabs(double(v)));
    expect_within_bf16(layer.forward(f["x"], pass), f["y"], name + " y", 0x1p-9 * bias);
    expect_within_bf16(layer.backward(f["x"], f["dy"], pass), f["dx"], name + " dx");
    for (auto* p : layer.parameters())
        expect_within_bf16(p->grad, f["d" + p->name], name + " d" + p->name);
}

TEST(MixedPrecision, Conv2dMatchesPyTorchsAutocast) {
    Conv2dOptions o;
    o.in_channels = 8, o.out_channels = 16, o.kernel_h = o.kernel_w = 3, o.pad_h = o.pad_w = 1;
    Conv2d conv(o);
    check_against_fixture(conv, "bf16_conv2d");
    Conv2dOptions strided = o;
    strided.in_channels = 16, strided.out_channels = 24, strided.stride_h = strided.stride_w = 2;
    Conv2d conv2(strided);
    check_against_fixture(conv2, "bf16_conv2d_strided");
}

TEST(MixedPrecision, LinearMatchesPyTorchsAutocast) {
    Linear fc(LinearOptions{37, 13, true, "kaiming"});
    check_against_fixture(fc, "bf16_linear");
}

}  // namespace
}  // namespace tandem::test

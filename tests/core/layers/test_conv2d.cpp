#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "layers/conv2d.h"
#include "support/close.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

Conv2dOptions conv_options(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride,
                           std::int64_t pad, std::int64_t groups = 1, bool bias = true) {
    Conv2dOptions o;
    o.in_channels = in, o.out_channels = out;
    o.kernel_h = o.kernel_w = k;
    o.stride_h = o.stride_w = stride;
    o.pad_h = o.pad_w = pad;
    o.groups = groups;
    o.bias = bias;
    return o;
}

// Bias drawn too, so that the gradient check sees a non-zero bias.
void randomise(Conv2d& conv, std::uint64_t seed) {
    conv.initialize(seed);
    for (auto* p : conv.parameters())
        if (p->name == "bias")
            p->value.copy_from(random_tensor(p->value.shape(), host_device(), seed));
}

void grad_check(const Conv2dOptions& options, const Shape& input, Layout layout,
                const std::string& impl = "") {
    Conv2d conv(options);
    conv.set_name("conv1");
    if (!impl.empty()) conv.set_kernel_impl(impl);
    randomise(conv, 3);
    GradCheckOptions o;
    o.layout = layout;
    check_gradients(conv, random_tensor(input, test_device(), 11, -1.f, 1.f, layout), test_device(),
                    o);
}

TEST(Conv2d, GradientContiguous) {
    grad_check(conv_options(3, 4, 3, 1, 1), {2, 3, 5, 6}, Layout::contiguous);
}

TEST(Conv2d, GradientChannelsLast) {
    grad_check(conv_options(3, 4, 3, 1, 1), {2, 3, 5, 6}, Layout::channels_last);
}

// 16 channels in and out: oneDNN's blocked formats hold them without padding (blocks of 8 or
// 16), so the kernel reorders the activations into them (dnnl_activation.h).
TEST(Conv2d, GradientChannelBlocked) {
    grad_check(conv_options(16, 16, 3, 1, 1), {2, 16, 4, 5}, Layout::channels_last);
    grad_check(conv_options(16, 16, 3, 2, 1), {1, 16, 5, 4}, Layout::contiguous);
}

TEST(Conv2d, GradientStride2Padding) {
    grad_check(conv_options(2, 3, 3, 2, 2), {2, 2, 7, 6}, Layout::contiguous);
    grad_check(conv_options(2, 3, 3, 2, 2), {2, 2, 7, 6}, Layout::channels_last);
}

TEST(Conv2d, GradientGroupsNoBias) {
    grad_check(conv_options(4, 6, 3, 1, 1, 2, false), {2, 4, 5, 5}, Layout::contiguous);
    grad_check(conv_options(4, 6, 3, 1, 1, 2, false), {2, 4, 5, 5}, Layout::channels_last);
}

TEST(Conv2d, GradientRectangularKernel) {
    Conv2dOptions o = conv_options(2, 3, 1, 1, 0);
    o.kernel_h = 2, o.kernel_w = 3, o.stride_w = 2, o.pad_w = 1;
    grad_check(o, {1, 2, 4, 7}, Layout::contiguous);
}

// |a - b| within 1e-4 of the larger of 1 and the largest |b|: the scale of the sums involved.
struct Case {
    Conv2dOptions options;
    Shape input;
    Layout layout;
    std::string text() const {
        std::ostringstream s;
        s << input.to_string() << " " << (layout == Layout::channels_last ? "nhwc" : "nchw") << " "
          << options.in_channels << "->" << options.out_channels << " k" << options.kernel_h << " s"
          << options.stride_h << " p" << options.pad_h << " g" << options.groups
          << (options.bias ? "" : " no-bias");
        return s.str();
    }
};

// Runs forward and backward on both kernels from the same weights and the same non-zero
// starting gradients (so the ADD contract is compared too); then changes the weights and
// runs forward again, which catches a kernel that reorders its weights only once.
void compare_with_reference(const Case& c, const std::string& impl = "dnnl",
                            Precision precision = Precision::fp32) {
    SCOPED_TRACE(c.text() + " " + impl + " " + std::string(precision_name(precision)));
    Conv2d fast(c.options), ref(c.options);
    fast.set_kernel_impl(impl);
    ref.set_kernel_impl("reference");
    fast.set_precision(precision), ref.set_precision(precision);
    for (Conv2d* conv : {&fast, &ref}) {
        randomise(*conv, 5);
        for (auto* p : conv->parameters())
            p->grad.copy_from(random_tensor(p->grad.shape(), host_device(), 6));
    }
    Tensor x = random_tensor(c.input, test_device(), 7, -1.f, 1.f, c.layout);
    const Shape out = fast.output_shape(c.input);
    Tensor dy = random_tensor(out, test_device(), 8, -1.f, 1.f, c.layout);

    Tape t1, t2;
    Pass p1{test_device(), Mode::train, 0, t1, 0}, p2{test_device(), Mode::train, 0, t2, 0};
    Tensor y_fast = fast.forward(x, p1), y_ref = ref.forward(x, p2);
    EXPECT_EQ(y_fast.layout(), c.layout);
    expect_close_to_scale(y_fast, y_ref, "y");
    expect_close_to_scale(fast.backward(x, dy, p1), ref.backward(x, dy, p2), "dx");
    for (std::size_t i = 0; i < fast.parameters().size(); ++i)
        expect_close_to_scale(fast.parameters()[i]->grad, ref.parameters()[i]->grad,
                              "d" + fast.parameters()[i]->name);

    fast.initialize(9), ref.initialize(9);
    expect_close_to_scale(fast.forward(x, p1), ref.forward(x, p2), "y after new weights");
}

TEST(Conv2d, DnnlMatchesReference) {
    const Case cases[] = {
        {conv_options(3, 8, 3, 1, 1), {2, 3, 9, 9}, Layout::contiguous},
        {conv_options(3, 8, 3, 1, 1), {2, 3, 9, 9}, Layout::channels_last},
        {conv_options(16, 32, 3, 1, 1), {2, 16, 8, 8}, Layout::channels_last},
        {conv_options(16, 32, 3, 1, 1), {2, 16, 8, 8}, Layout::contiguous},
        {conv_options(16, 16, 3, 2, 1, 1, false), {3, 16, 9, 7}, Layout::channels_last},
        {conv_options(8, 12, 3, 1, 1, 2), {2, 8, 6, 6}, Layout::contiguous},
        {conv_options(32, 32, 3, 1, 1, 2), {2, 32, 6, 6}, Layout::channels_last},
        {conv_options(16, 16, 3, 1, 1, 16), {2, 16, 7, 7}, Layout::channels_last},  // depthwise
        {conv_options(24, 40, 1, 1, 0), {4, 24, 5, 5}, Layout::channels_last},
        {conv_options(3, 16, 5, 2, 2), {2, 3, 11, 11}, Layout::channels_last},
    };
    for (const auto& c : cases) compare_with_reference(c);
}

// bf16 (device/precision.h): oneDNN's kernels against the reference fed the same operands
// rounded to bfloat16 (rounded_operands.h), which differ only in the order of float32 sums; the
// default CPU kernel takes oneDNN's for every pass.
TEST(Conv2d, Bf16MatchesRoundedReference) {
    const std::string why = test_device().precision_unavailable(Precision::bf16);
    if (!why.empty()) GTEST_SKIP() << "no bf16 kernels on " << test_device().name() << ": " << why;
    const Case cases[] = {
        {conv_options(3, 8, 3, 1, 1), {2, 3, 9, 9}, Layout::contiguous},
        {conv_options(16, 32, 3, 1, 1), {2, 16, 8, 8}, Layout::channels_last},
        {conv_options(16, 32, 3, 1, 1), {2, 16, 8, 8}, Layout::contiguous},
        {conv_options(16, 16, 3, 2, 1, 1, false), {3, 16, 9, 7}, Layout::channels_last},
        {conv_options(8, 12, 3, 1, 1, 2), {2, 8, 6, 6}, Layout::contiguous},
        {conv_options(24, 40, 1, 1, 0), {4, 24, 5, 5}, Layout::channels_last},
        {conv_options(20, 50, 5, 1, 0), {3, 20, 12, 11}, Layout::channels_last},  // LeNet-5's
        {conv_options(3, 16, 5, 2, 2), {2, 3, 11, 11}, Layout::channels_last},
    };
    for (const auto& c : cases) compare_with_reference(c, "dnnl", Precision::bf16);
    for (const auto& c : cases) compare_with_reference(c, "cpu", Precision::bf16);
}

// ... and the comparison above sees the difference: bf16 is about 2^-9 of each operand from
// float32, which moves sums of many products by far more than that comparison allows.
TEST(Conv2d, Bf16DiffersFromFloat32AsRoundingDoes) {
    const std::string why = test_device().precision_unavailable(Precision::bf16);
    if (!why.empty()) GTEST_SKIP() << "no bf16 kernels on " << test_device().name() << ": " << why;
    const auto options = conv_options(32, 32, 3, 1, 1);
    Conv2d half(options), full(options);
    half.set_precision(Precision::bf16);
    randomise(half, 5), randomise(full, 5);
    const Tensor x =
        random_tensor({2, 32, 8, 8}, test_device(), 7, -1.f, 1.f, Layout::channels_last);
    Tape t1, t2;
    Pass p1{test_device(), Mode::train, 0, t1, 0}, p2{test_device(), Mode::train, 0, t2, 0};
    const auto a = half.forward(x, p1).to_vector(), b = full.forward(x, p2).to_vector();
    double scale = 1, largest = 0;
    for (float v : b) scale = std::max(scale, std::fabs(double(v)));
    for (std::size_t i = 0; i < a.size(); ++i)
        largest = std::max(largest, std::fabs(double(a[i]) - double(b[i])));
    EXPECT_GT(largest, 1e-3 * scale);  // ten times what the comparisons above allow
    EXPECT_LT(largest, 3e-2 * scale);  // and no more than rounding the operands explains
}

// A convolution of our own asked for bf16 says it computes in fp32 only.
TEST(Conv2d, OwnKernelsRefuseBf16) {
    for (const std::string impl : {"winograd", "gemm", "thin_input"}) {
        Conv2d conv(conv_options(16, 16, 3, 1, 1));
        conv.set_kernel_impl(impl);
        conv.set_precision(Precision::bf16);
        try {
            conv.bind(test_device(), {2, 16, 8, 8}, Layout::channels_last);
            ADD_FAILURE() << impl << " accepted bf16";
        } catch (const ConfigError& e) {
            EXPECT_NE(
                std::string(e.what()).find("'" + impl + "' convolution computes in fp32 only"),
                std::string::npos)
                << e.what();
        }
    }
}

// Winograd's tiles (conv2d_winograd.cpp): F(4x4, 3x3), F(2x2, 3x3) on a tiny output, and
// F(2x2, 5x5); outputs that
// end inside a tile; padding 0, 1 and 2 (backward data pads 2, 1 and 0); channel counts past
// one 64-lane pass; enough tiles for several chunks per thread; with and without bias.
TEST(Conv2d, WinogradMatchesReference) {
    const Case cases[] = {
        {conv_options(16, 32, 3, 1, 1), {2, 16, 8, 8}, Layout::channels_last},
        {conv_options(5, 7, 3, 1, 1), {3, 5, 9, 7}, Layout::channels_last},
        {conv_options(8, 6, 3, 1, 0), {2, 8, 10, 11}, Layout::channels_last},
        {conv_options(6, 9, 3, 1, 2, 1, false), {2, 6, 5, 6}, Layout::channels_last},
        {conv_options(4, 4, 3, 1, 1), {2, 4, 2, 2}, Layout::channels_last},  // F(2x2)
        {conv_options(70, 66, 3, 1, 1), {2, 70, 7, 7}, Layout::channels_last},
        {conv_options(32, 32, 3, 1, 1, 1, false), {16, 32, 28, 28}, Layout::channels_last},
        // F(2x2, 5x5): padding 2 and 0 (backward data pads 2 and 4), a ragged edge.
        {conv_options(16, 24, 5, 1, 2), {2, 16, 15, 15}, Layout::channels_last},
        {conv_options(20, 50, 5, 1, 0, 1, false), {3, 20, 12, 11}, Layout::channels_last},
    };
    for (const auto& c : cases) compare_with_reference(c, "winograd");
    // The default CPU kernel, pass by pass: Winograd from 16 channels each side where its tiles
    // save, gemm or oneDNN else (LeNet-5's 20 -> 50: Winograd, gemm's backward data, Winograd).
    for (const auto& c : cases) compare_with_reference(c, "cpu");
}

// Called from inside another OpenMP team, the kernel's own parallel regions get one thread
// where it asked the device's two: the weights' gradient must add only the partial sums of
// threads that ran (the others' scratch holds whatever was there: here, the partial sums of
// the same call made first with both threads).
TEST(Conv2d, PartialSumsInsideAnotherTeam) {
    const Case c{conv_options(16, 16, 3, 1, 1), {4, 16, 12, 12}, Layout::channels_last};
    for (const std::string impl : {"winograd", "gemm", "thin_input"}) {
        const Case thin{conv_options(3, 16, 3, 1, 1), {4, 3, 12, 12}, Layout::channels_last};
        const Case& which = impl == "thin_input" ? thin : c;
        compare_with_reference(which, impl);
        const int levels = omp_get_max_active_levels();
        omp_set_max_active_levels(1);
        bool ran = false;
#pragma omp parallel num_threads(2)
        {
            if (omp_get_thread_num() == 0) {
                compare_with_reference(which, impl);
                ran = true;
            }
        }
        omp_set_max_active_levels(levels);
        EXPECT_TRUE(ran);
    }
}

// A first layer's forward and weights' gradient in our loops (conv2d_thin_input.cpp): 1 and 3
// input channels, stride 1 and 2, padding, 5x5 and 7x7, bias or none, an odd batch for the
// threads' split, output channels in whole and in partial vectors, and output rows of several
// whole blocks of pixels and a rest (26 and 29 wide).
TEST(Conv2d, ThinInputMatchesReference) {
    const Case cases[] = {
        {conv_options(1, 32, 3, 1, 1, 1, false), {5, 1, 9, 8}, Layout::channels_last},
        {conv_options(3, 16, 3, 2, 1), {3, 3, 11, 10}, Layout::channels_last},
        {conv_options(3, 64, 5, 2, 2), {2, 3, 13, 13}, Layout::channels_last},
        {conv_options(4, 8, 1, 1, 0), {2, 4, 5, 5}, Layout::channels_last},
        // Output channels in partial vectors (LeNet-5's 1 -> 20), taps in several register
        // blocks, stride 2 over an even width (the padded plane's last column unread).
        {conv_options(1, 20, 5, 1, 0), {3, 1, 12, 11}, Layout::channels_last},
        {conv_options(3, 13, 3, 2, 1, 1, false), {2, 3, 9, 8}, Layout::channels_last},
        {conv_options(2, 56, 7, 1, 3), {2, 2, 9, 9}, Layout::channels_last},
        {conv_options(1, 20, 5, 1, 0), {2, 1, 7, 30}, Layout::channels_last},
        {conv_options(3, 32, 3, 1, 1, 1, false), {3, 3, 4, 29}, Layout::channels_last},
    };
    for (const auto& c : cases) compare_with_reference(c, "thin_input");
    for (const auto& c : cases) compare_with_reference(c, "cpu");
}

// Convolutions as matrix products (conv2d_gemm.cpp): channels in partial vectors
// (LeNet-5's 20 -> 50, forward too), stride 2 with padding, a rectangular
// kernel, 1x1 (no column matrix), bias or none, a kernel wider than its input whose rows run
// into the padding on both sides, and a batch of several chunks per thread (a chunk's column
// matrix holds at most 2^20 floats).
TEST(Conv2d, GemmMatchesReference) {
    Conv2dOptions rectangular = conv_options(5, 7, 1, 1, 0);
    rectangular.kernel_h = 2, rectangular.kernel_w = 3, rectangular.stride_w = 2,
    rectangular.pad_w = 1;
    const Case cases[] = {
        {conv_options(20, 50, 5, 1, 0), {3, 20, 12, 12}, Layout::channels_last},
        {conv_options(3, 10, 3, 2, 2, 1, false), {2, 3, 9, 8}, Layout::channels_last},
        {rectangular, {3, 5, 6, 9}, Layout::channels_last},
        {conv_options(24, 12, 1, 1, 0), {2, 24, 5, 5}, Layout::channels_last},
        {conv_options(12, 16, 1, 1, 0, 1, false), {3, 12, 5, 4}, Layout::channels_last},
        {conv_options(4, 8, 5, 1, 3), {2, 4, 3, 2}, Layout::channels_last},
        {conv_options(16, 24, 3, 1, 1), {21, 16, 28, 28}, Layout::channels_last},
    };
    for (const auto& c : cases) compare_with_reference(c, "gemm");
    for (const auto& c : cases) compare_with_reference(c, "cpu");
}

TEST(Conv2d, GradientGemm) {
    grad_check(conv_options(3, 4, 3, 1, 1), {2, 3, 5, 6}, Layout::channels_last, "gemm");
    grad_check(conv_options(2, 3, 3, 2, 2), {2, 2, 7, 6}, Layout::channels_last, "gemm");
}

TEST(Conv2d, GradientWinograd) {
    grad_check(conv_options(3, 4, 3, 1, 1), {2, 3, 5, 6}, Layout::channels_last, "winograd");
    grad_check(conv_options(2, 3, 3, 1, 0, 1, false), {1, 2, 6, 7}, Layout::channels_last,
               "winograd");
    grad_check(conv_options(2, 2, 3, 1, 2), {1, 2, 3, 3}, Layout::channels_last, "winograd");
    grad_check(conv_options(2, 3, 5, 1, 2), {1, 2, 5, 6}, Layout::channels_last, "winograd");
}

// A kernel asked for by name that does not fit the layer says what it takes.
TEST(Conv2d, KernelsRefuseWhatTheyDoNotFit) {
    const struct {
        const char* impl;
        Conv2dOptions options;
        const char* words;
    } cases[] = {
        {"winograd", conv_options(4, 4, 3, 2, 1), "3x3 or 5x5 filters at stride 1"},
        {"gemm", conv_options(4, 4, 3, 1, 1, 2), "one group on channels-last"},
        {"thin_input", conv_options(8, 4, 3, 1, 1), "at most 4 input channels"},
    };
    for (const auto& c : cases) {
        Conv2d conv(c.options);
        conv.set_name("conv7");
        conv.set_kernel_impl(c.impl);
        Tape tape;
        Pass pass{test_device(), Mode::train, 0, tape, 0};
        const Shape input{1, c.options.in_channels, 6, 6};
        try {
            conv.forward(random_tensor(input, test_device(), 1, -1.f, 1.f, Layout::channels_last),
                         pass);
            ADD_FAILURE() << "a convolution it does not fit ran on the " << c.impl << " kernel";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << e.what();
        }
    }
}

// The kernels of one device share the scratch their reordered activations go through: a
// larger kernel grows it between a smaller one's forward and backward, and each call still
// sees its own arguments.
TEST(Conv2d, KernelsOfOneDeviceShareReorderScratch) {
    Conv2d small(conv_options(16, 16, 3, 1, 1)), large(conv_options(32, 64, 3, 1, 1));
    Conv2d small_ref(conv_options(16, 16, 3, 1, 1)), large_ref(conv_options(32, 64, 3, 1, 1));
    for (Conv2d* ref : {&small_ref, &large_ref}) ref->set_kernel_impl("reference");
    for (Conv2d* conv : {&small, &large, &small_ref, &large_ref}) randomise(*conv, 5);
    const Tensor xs = random_tensor({2, 16, 6, 6}, test_device(), 7, -1.f, 1.f);
    const Tensor xl = random_tensor({2, 32, 12, 12}, test_device(), 8, -1.f, 1.f);
    const Tensor dys = random_tensor(small.output_shape(xs.shape()), test_device(), 9);
    const Tensor dyl = random_tensor(large.output_shape(xl.shape()), test_device(), 10);

    Tape ts, tl, trs, trl;
    Pass ps{test_device(), Mode::train, 0, ts, 0}, pl{test_device(), Mode::train, 0, tl, 0};
    Pass prs{test_device(), Mode::train, 0, trs, 0}, prl{test_device(), Mode::train, 0, trl, 0};
    const Tensor ys = small.forward(xs, ps), yl = large.forward(xl, pl);
    const Tensor dxs = small.backward(xs, dys, ps), dxl = large.backward(xl, dyl, pl);
    expect_close_to_scale(ys, small_ref.forward(xs, prs), "small y");
    expect_close_to_scale(yl, large_ref.forward(xl, prl), "large y");
    expect_close_to_scale(dxs, small_ref.backward(xs, dys, prs), "small dx");
    expect_close_to_scale(dxl, large_ref.backward(xl, dyl, prl), "large dx");
    for (std::size_t i = 0; i < small.parameters().size(); ++i)
        expect_close_to_scale(small.parameters()[i]->grad, small_ref.parameters()[i]->grad,
                              "small d" + small.parameters()[i]->name);
}

// A strided 1x1 convolution over a thin input (a ResNet's projection shortcut on a 4-channel
// stage): oneDNN 2.6's jit_1x1 backward-weights kernel gave wrong gradients, corrupted the heap
// and could spin forever on these; the kernel routes around it (faulty_backward_weights).
// Run on every CPU the tests run on, whichever ISA oneDNN picks there.
TEST(Conv2d, ThinStrided1x1MatchesReference) {
    for (const std::int64_t in : {1, 2, 3, 4, 7, 12})
        for (const std::int64_t out : {8, 16, 64})
            for (const Layout layout : {Layout::channels_last, Layout::contiguous})
                compare_with_reference(
                    {conv_options(in, out, 1, 2, 0, 1, false), {8, in, 16, 16}, layout});
    compare_with_reference({conv_options(4, 16, 1, 3, 0), {4, 4, 14, 14}, Layout::channels_last});
}

std::string shape_error(Conv2d& conv, const Shape& input) {
    try {
        conv.output_shape(input);
    } catch (const ShapeError& e) {
        return e.what();
    }
    ADD_FAILURE() << "no ShapeError for input " << input.to_string();
    return {};
}

TEST(Conv2d, ShapeErrorsNameLayerAndShapes) {
    Conv2d conv(conv_options(64, 64, 3, 1, 1));
    conv.set_name("conv3");
    EXPECT_EQ(shape_error(conv, {8, 3, 32, 32}),
              "Conv2d 'conv3': input has 3 channels, weight expects 64 (input 8x3x32x32, weight "
              "64x64x3x3)");
    const std::string rank = shape_error(conv, {8, 64, 32});
    EXPECT_NE(rank.find("conv3"), std::string::npos) << rank;
    EXPECT_NE(rank.find("8x64x32"), std::string::npos) << rank;

    Conv2d big(conv_options(2, 2, 5, 1, 0));
    big.set_name("conv9");
    const std::string small = shape_error(big, {1, 2, 3, 8});
    EXPECT_NE(small.find("conv9"), std::string::npos) << small;
    EXPECT_NE(small.find("1x2x3x8"), std::string::npos) << small;
    EXPECT_NE(small.find("5x5"), std::string::npos) << small;
    EXPECT_EQ(big.output_shape({1, 2, 5, 8}), (Shape{1, 2, 1, 4}));
}

TEST(Conv2d, ForwardAndBackwardCheckShapes) {
    Conv2d conv(conv_options(3, 4, 3, 1, 1));
    conv.set_name("conv1");
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    EXPECT_THROW(conv.forward(random_tensor({1, 2, 5, 5}, test_device(), 1), pass), ShapeError);
    Tensor x = random_tensor({1, 3, 5, 5}, test_device(), 1);
    conv.forward(x, pass);
    try {
        conv.backward(x, random_tensor({1, 4, 4, 4}, test_device(), 2), pass);
        FAIL() << "expected ShapeError";
    } catch (const ShapeError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("conv1"), std::string::npos) << msg;
        EXPECT_NE(msg.find("1x4x4x4"), std::string::npos) << msg;
        EXPECT_NE(msg.find("1x4x5x5"), std::string::npos) << msg;
    }
}

void expect_config_error(const Conv2dOptions& o, const std::string& words) {
    try {
        Conv2d conv(o);
        ADD_FAILURE() << "expected ConfigError mentioning " << words;
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
}

TEST(Conv2d, BadOptionsAreConfigErrors) {
    auto with = [](auto change) {
        Conv2dOptions o = conv_options(4, 8, 3, 1, 1);
        change(o);
        return o;
    };
    expect_config_error(with([](auto& o) { o.in_channels = 0; }), "in_channels");
    expect_config_error(with([](auto& o) { o.out_channels = -1; }), "out_channels");
    expect_config_error(with([](auto& o) { o.kernel_w = 0; }), "kernel_w");
    expect_config_error(with([](auto& o) { o.stride_h = 0; }), "stride_h");
    expect_config_error(with([](auto& o) { o.pad_w = -1; }), "pad_w");
    expect_config_error(with([](auto& o) { o.groups = 0; }), "groups");
    expect_config_error(with([](auto& o) { o.groups = 3; }), "groups (3) must divide");
    expect_config_error(with([](auto& o) { o.init = "he"; }), "known: kaiming");
}

TEST(Conv2d, ParametersAndInitialisation) {
    Conv2d conv(conv_options(64, 32, 3, 1, 1, 2));
    auto params = conv.parameters();
    ASSERT_EQ(params.size(), 2u);
    EXPECT_EQ(params[0]->name, "weight");
    EXPECT_EQ(params[0]->value.shape(), (Shape{32, 32, 3, 3}));
    EXPECT_TRUE(params[0]->decay);
    EXPECT_EQ(params[1]->name, "bias");
    EXPECT_EQ(params[1]->value.shape(), (Shape{32}));
    EXPECT_FALSE(params[1]->decay);

    // kaiming: std sqrt(2 / fan_in), fan_in = 64 / 2 * 9.
    const auto w = params[0]->value.to_vector();
    double sum_sq = 0;
    for (float v : w) sum_sq += double(v) * v;
    EXPECT_NEAR(std::sqrt(sum_sq / double(w.size())), std::sqrt(2.0 / 288),
                0.05 * std::sqrt(2.0 / 288));
    for (float v : params[1]->value.to_vector()) EXPECT_EQ(v, 0.f);

    Conv2d same(conv_options(64, 32, 3, 1, 1, 2));
    EXPECT_EQ(same.parameters()[0]->value.to_vector(), w);  // the constructor draws from seed 0
    same.initialize(1);
    EXPECT_NE(same.parameters()[0]->value.to_vector(), w);

    Conv2d no_bias(conv_options(3, 4, 3, 1, 1, 1, false));
    ASSERT_EQ(no_bias.parameters().size(), 1u);
    EXPECT_EQ(no_bias.parameters()[0]->name, "weight");
}

TEST(Conv2d, OptionsTextAndMemoryEstimate) {
    EXPECT_EQ(Conv2d(conv_options(1, 32, 3, 1, 1)).options_text(), "1->32, 3x3, stride 1, pad 1");
    EXPECT_EQ(Conv2d(conv_options(32, 64, 3, 2, 1, 2, false)).options_text(),
              "32->64, 3x3, stride 2, pad 1, groups 2, no bias");
    Conv2dOptions o = conv_options(3, 8, 1, 1, 0);
    o.kernel_h = 1, o.kernel_w = 7, o.pad_w = 3, o.init = "xavier";
    EXPECT_EQ(Conv2d(o).options_text(), "3->8, 1x7, stride 1, pad 0x3, init xavier");

    Conv2d conv(conv_options(3, 8, 3, 2, 1));
    const MemoryEstimate e = conv.memory_estimate({4, 3, 16, 16});
    EXPECT_EQ(e.parameter_bytes, (8 * 3 * 9 + 8) * sizeof(float));
    EXPECT_EQ(e.output_bytes, 4 * 8 * 8 * 8 * sizeof(float));
}

TEST(Conv2d, EvalForwardKeepsNothing) {
    Conv2d conv(conv_options(3, 4, 3, 1, 1));
    Tape tape;
    Pass pass{test_device(), Mode::eval, 0, tape, 0};
    Tensor y = conv.forward(
        random_tensor({2, 3, 4, 4}, test_device(), 1, -1.f, 1.f, Layout::channels_last), pass);
    EXPECT_EQ(y.shape(), (Shape{2, 4, 4, 4}));
    EXPECT_EQ(y.layout(), Layout::channels_last);
    EXPECT_TRUE(tape.empty());
}

}  // namespace
}  // namespace tandem::test

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "base/rng.h"
#include "layers/pool2d.h"
#include "support/close.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

// Distinct values 0.05 apart in a random order: no ties, and a +-1e-2 step never changes
// which element of a window is the largest.
Tensor permutation_input(const Shape& shape, Layout layout, std::uint64_t seed = 3) {
    std::vector<std::size_t> order(static_cast<std::size_t>(shape.numel()));
    std::iota(order.begin(), order.end(), 0);
    for (std::size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[rng_bits(seed, i) % i]);
    std::vector<float> v(order.size());
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = 0.05f * (float(order[i]) - float(v.size()) / 2);
    return Tensor::from_vector(shape, test_device(), v, layout);
}

Pool2dOptions window(std::int64_t k, std::int64_t s, std::int64_t p = 0, bool ceil = false,
                     bool include_pad = true) {
    return Pool2dOptions{k, k, s, s, p, p, ceil, include_pad};
}

// PyTorch's output size, written independently of Pool2dConfig.
std::int64_t torch_out(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p, bool ceil) {
    const double span = double(in + 2 * p - k) / double(s);
    auto out = std::int64_t(ceil ? std::ceil(span) : std::floor(span)) + 1;
    if (ceil && (out - 1) * s >= in + p) --out;
    return out;
}

TEST(Pool2d, OutputShapesFollowPyTorch) {
    struct Case {
        std::int64_t in, k, s, p;
        bool ceil;
        std::int64_t want;  // worked out by hand from PyTorch's formula
    };
    const Case cases[] = {
        {7, 3, 2, 0, false, 3},   {7, 3, 2, 0, true, 3},  {8, 3, 2, 0, false, 3},
        {8, 3, 2, 0, true, 4},    {6, 3, 2, 1, false, 3}, {6, 3, 2, 1, true, 4},
        {5, 2, 2, 1, true, 3},  // ceil would start a 4th window in the right padding: dropped
        {55, 3, 2, 0, false, 27}, {5, 2, 2, 0, true, 3},  {4, 4, 4, 0, true, 1},
    };
    for (const auto& c : cases) {
        ASSERT_EQ(torch_out(c.in, c.k, c.s, c.p, c.ceil), c.want);
        MaxPool2d pool(window(c.k, c.s, c.p, c.ceil));
        EXPECT_EQ(pool.output_shape({2, 3, c.in, c.in}), Shape({2, 3, c.want, c.want}))
            << "in " << c.in << " kernel " << c.k << " stride " << c.s << " pad " << c.p
            << (c.ceil ? " ceil" : " floor");
        // The kernels must produce that many outputs too.
        Tape tape;
        Pass pass{test_device(), Mode::train, 0, tape, 0};
        EXPECT_EQ(
            pool.forward(permutation_input({1, 1, c.in, c.in}, Layout::contiguous), pass).shape(),
            Shape({1, 1, c.want, c.want}));
    }
    AvgPool2d rect({3, 2, 2, 1, 1, 0, false, true});
    EXPECT_EQ(rect.output_shape({1, 2, 9, 6}), Shape({1, 2, 5, 5}));
    EXPECT_EQ(GlobalAvgPool2d().output_shape({4, 8, 7, 5}), Shape({4, 8, 1, 1}));
}

struct GradCase {
    const char* name;
    bool max;
    Pool2dOptions options;
    Shape input;
};

const GradCase kGradCases[] = {
    {"max 2x2/2", true, window(2, 2), {2, 3, 6, 6}},
    {"max 3x3/2 pad 1 ceil", true, window(3, 2, 1, true), {1, 2, 8, 8}},
    {"avg 3x3/2 pad 1 ceil incl", false, window(3, 2, 1, true), {1, 2, 8, 8}},
    {"avg 3x3/2 pad 1 excl", false, window(3, 2, 1, false, false), {2, 2, 5, 5}},
};

TEST(Pool2d, Gradients) {
    for (const auto& c : kGradCases)
        for (Mode mode : {Mode::train, Mode::eval})
            for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
                SCOPED_TRACE(std::string(c.name) + (mode == Mode::train ? " train" : " eval") +
                             (layout == Layout::contiguous ? " NCHW" : " NHWC"));
                std::unique_ptr<Pool2d> pool;
                if (c.max)
                    pool = std::make_unique<MaxPool2d>(c.options);
                else
                    pool = std::make_unique<AvgPool2d>(c.options);
                pool->set_name("pool1");
                GradCheckOptions o;
                o.mode = mode;
                o.layout = layout;
                o.max_elements = 60;
                check_gradients(*pool, permutation_input(c.input, layout), test_device(), o);
            }
}

TEST(Pool2d, GlobalAveragePoolGradientAndValues) {
    GlobalAvgPool2d pool;
    pool.set_name("gap");
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        GradCheckOptions o;
        o.layout = layout;
        Tensor x = random_tensor({2, 3, 4, 5}, test_device(), 8, -1.f, 1.f, layout);
        check_gradients(pool, x, test_device(), o);
        Tape tape;
        Pass pass{test_device(), Mode::eval, 0, tape, 0};
        const auto y = pool.forward(x, pass).to_vector();
        const auto v = x.to_vector();
        for (std::size_t nc = 0; nc < 6; ++nc) {
            double sum = 0;
            for (std::size_t i = 0; i < 20; ++i) sum += v[nc * 20 + i];
            EXPECT_NEAR(y[nc], sum / 20, 1e-6);
        }
    }
}

// Small cases worked out by hand (PyTorch's definitions), for both kernels.
TEST(Pool2d, HandComputedValues) {
    std::vector<float> ramp(16);
    std::iota(ramp.begin(), ramp.end(), 1.f);  // 4x4: 1..16
    std::vector<float> ramp25(25);
    std::iota(ramp25.begin(), ramp25.end(), 1.f);  // 5x5: 1..25
    struct Case {
        const char* name;
        bool max;
        Pool2dOptions options;
        std::int64_t side;
        std::vector<float> want;
    };
    const Case cases[] = {
        {"max 2x2/2", true, window(2, 2), 4, {6, 8, 14, 16}},
        {"avg 3x3/2 pad 1 incl", false, window(3, 2, 1), 4, {14 / 9.f, 30 / 9.f, 57 / 9.f, 11}},
        {"avg 3x3/2 pad 1 excl",
         false,
         window(3, 2, 1, false, false),
         4,
         {14 / 4.f, 30 / 6.f, 57 / 6.f, 11}},
        // ceil: the last row and column of windows hang past the input (no padding to count),
        // so they divide by their clipped size: 2 or 1 elements.
        {"avg 2x2/2 ceil incl",
         false,
         window(2, 2, 0, true),
         5,
         {4, 6, 7.5f, 14, 16, 17.5f, 21.5f, 23.5f, 25}},
        {"max 2x2/2 ceil", true, window(2, 2, 0, true), 5, {7, 9, 10, 17, 19, 20, 22, 24, 25}},
    };
    for (const auto& c : cases)
        for (const std::string impl : {"dnnl", "reference"})
            for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
                std::unique_ptr<Pool2d> pool;
                if (c.max)
                    pool = std::make_unique<MaxPool2d>(c.options);
                else
                    pool = std::make_unique<AvgPool2d>(c.options);
                pool->set_kernel_impl(impl);
                Tape tape;
                Pass pass{test_device(), Mode::train, 0, tape, 0};
                Tensor x = Tensor::from_vector({1, 1, c.side, c.side}, test_device(),
                                               c.side == 4 ? ramp : ramp25, layout);
                expect_close(pool->forward(x, pass).to_vector(), c.want, 1e-6,
                             std::string(c.name) + " " + impl);
            }
}

// The default kernels (ours for max pooling in channels-last, oneDNN's for the rest) and
// oneDNN's everywhere, against the reference.
TEST(Pool2d, CpuAndDnnlMatchReference) {
    struct Case {
        const char* name;
        bool max;
        Pool2dOptions options;
        Shape input;
    };
    const Case cases[] = {
        {"max 3x3/2", true, window(3, 2), {2, 5, 9, 9}},
        {"max 3x3/2 pad 1 ceil", true, window(3, 2, 1, true), {2, 5, 10, 8}},
        {"max 3x2/1x2", true, {3, 2, 1, 2, 1, 0, false, true}, {1, 3, 7, 6}},
        // Channels-last max pooling takes 8 channels at a time, then one by one.
        {"max 2x2/2 20 channels", true, window(2, 2), {2, 20, 6, 8}},  // windows tile the input
        {"max 2x2/2 ragged 20 channels", true, window(2, 2), {2, 20, 6, 7}},
        {"max 3x3/2 pad 1 ceil 11 channels", true, window(3, 2, 1, true), {2, 11, 7, 6}},
        {"avg 2x2/2 ceil incl", false, window(2, 2, 0, true), {2, 4, 7, 7}},
        {"avg 3x3/2 pad 1 ceil incl", false, window(3, 2, 1, true), {2, 4, 8, 9}},
        {"avg 3x3/2 pad 1 ceil excl", false, window(3, 2, 1, true, false), {2, 4, 8, 9}},
        {"avg 5x5/3 pad 2", false, window(5, 3, 2), {1, 3, 11, 11}},
    };
    for (const auto& c : cases)
        for (Mode mode : {Mode::train, Mode::eval})
            for (Layout layout : {Layout::contiguous, Layout::channels_last})
                for (const std::string impl : {"cpu", "dnnl"}) {
                    const std::string what = impl + " " + c.name + " " + c.input.to_string() +
                                             (mode == Mode::train ? " train" : " eval") +
                                             (layout == Layout::contiguous ? " NCHW" : " NHWC");
                    std::unique_ptr<Pool2d> fast, ref;
                    if (c.max) {
                        fast = std::make_unique<MaxPool2d>(c.options);
                        ref = std::make_unique<MaxPool2d>(c.options);
                    } else {
                        fast = std::make_unique<AvgPool2d>(c.options);
                        ref = std::make_unique<AvgPool2d>(c.options);
                    }
                    fast->set_kernel_impl(impl);
                    ref->set_kernel_impl("reference");
                    Tensor x = permutation_input(c.input, layout, 11);
                    const Shape out = fast->output_shape(c.input);
                    Tensor dy = random_tensor(out, test_device(), 12, -1.f, 1.f, layout);
                    Tape t1, t2;
                    Pass p1{test_device(), mode, 0, t1, 0}, p2{test_device(), mode, 0, t2, 0};
                    Tensor y1 = fast->forward(x, p1);
                    EXPECT_EQ(y1.layout(), layout) << what;
                    expect_close(y1.to_vector(), ref->forward(x, p2).to_vector(), 1e-5,
                                 what + " y");
                    Tensor dx1 = fast->backward(x, dy, p1);
                    EXPECT_EQ(dx1.layout(), layout) << what;
                    expect_close(dx1.to_vector(), ref->backward(x, dy, p2).to_vector(), 1e-5,
                                 what + " dx");
                }
}

// Equal values in a window: the gradient goes to the first maximum in row-major order.
TEST(Pool2d, TiesGoToFirstMaximum) {
    const std::vector<float> x = {1, 1, 0, 2,  //
                                  1, 0, 2, 2,  //
                                  3, 3, 5, 4,  //
                                  3, 3, 5, 5};
    const std::vector<float> want = {1, 0, 0, 2,  //
                                     0, 0, 0, 0,  //
                                     3, 0, 4, 0,  //
                                     0, 0, 0, 0};
    // The same image in every channel: 1 channel, and 9 (a vector of 8 and one more).
    const auto channels = [](const std::vector<float>& v, std::int64_t c) {
        std::vector<float> all;
        for (std::int64_t i = 0; i < c; ++i) all.insert(all.end(), v.begin(), v.end());
        return all;
    };
    for (const std::int64_t c : {1, 9})
        for (const std::string impl : {"cpu", "dnnl", "reference"})
            for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
                MaxPool2d pool(window(2, 2));
                pool.set_kernel_impl(impl);
                Tape tape;
                Pass pass{test_device(), Mode::train, 0, tape, 0};
                Tensor input =
                    Tensor::from_vector({1, c, 4, 4}, test_device(), channels(x, c), layout);
                pool.forward(input, pass);
                Tensor dy = Tensor::from_vector({1, c, 2, 2}, test_device(),
                                                channels({1, 2, 3, 4}, c), layout);
                EXPECT_EQ(pool.backward(input, dy, pass).to_vector(), channels(want, c))
                    << impl << " " << c << " channels";
            }
}

TEST(Pool2d, WorkspaceOnlyForMaxInTraining) {
    MaxPool2d max_pool(window(2, 2));
    AvgPool2d avg_pool(window(2, 2));
    for (Layout layout : {Layout::contiguous, Layout::channels_last})
        for (const std::string impl : {"cpu", "dnnl", "reference"}) {
            Tensor x = permutation_input({1, 2, 4, 4}, layout);
            max_pool.set_kernel_impl(impl);
            avg_pool.set_kernel_impl(impl);
            Tape train_tape, eval_tape;
            Pass train{test_device(), Mode::train, 0, train_tape, 0};
            Pass eval{test_device(), Mode::eval, 0, eval_tape, 0};
            max_pool.forward(x, train);
            ASSERT_TRUE(train_tape.contains(&max_pool)) << impl;
            const Tensor& ws = train_tape.get(&max_pool)[0];
            ASSERT_TRUE(ws.defined()) << impl;
            EXPECT_EQ(ws.dtype(), DType::u8) << impl;
            EXPECT_GT(ws.nbytes(), 0u) << impl;
            avg_pool.forward(x, train);
            EXPECT_FALSE(train_tape.get(&avg_pool)[0].defined()) << impl;
            max_pool.forward(x, eval);
            EXPECT_TRUE(eval_tape.empty()) << impl;
        }
}

TEST(Pool2d, OptionErrors) {
    EXPECT_THROW(MaxPool2d(window(0, 1)), ConfigError);
    EXPECT_THROW(MaxPool2d({3, 3, -1, 1, 0, 0, false, true}), ConfigError);
    EXPECT_THROW(AvgPool2d({3, 3, 1, 1, -1, 0, false, true}), ConfigError);
    EXPECT_THROW(AvgPool2d(window(3, 1, 2)), ConfigError);  // padding over half the kernel
    EXPECT_NO_THROW(AvgPool2d(window(2, 1, 1)));
    EXPECT_EQ(MaxPool2d(window(3, 0)).options().stride_h, 3) << "stride 0 means the kernel";
}

TEST(Pool2d, OptionsText) {
    EXPECT_EQ(MaxPool2d(window(3, 2)).options_text(), "3x3, stride 2");
    EXPECT_EQ(MaxPool2d(window(2, 0)).options_text(), "2x2, stride 2");
    EXPECT_EQ(AvgPool2d(window(3, 2, 1, true, false)).options_text(),
              "3x3, stride 2, pad 1, ceil, exclude pad");
}

TEST(Pool2d, ShapeErrorsNameLayerAndShapes) {
    MaxPool2d pool(window(3, 2));
    pool.set_name("pool3");
    try {
        pool.output_shape({1, 2, 2, 8});
        FAIL() << "expected ShapeError";
    } catch (const ShapeError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("pool3"), std::string::npos) << msg;
        EXPECT_NE(msg.find("1x2x2x8"), std::string::npos) << msg;
        EXPECT_NE(msg.find("3x3"), std::string::npos) << msg;
    }
    EXPECT_THROW(pool.output_shape({2, 8, 8}), ShapeError);
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    Tensor x = permutation_input({1, 1, 8, 8}, Layout::contiguous);
    pool.forward(x, pass);
    try {
        pool.backward(x, Tensor::zeros({1, 1, 4, 4}, test_device()), pass);
        FAIL() << "expected ShapeError";
    } catch (const ShapeError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("1x1x4x4"), std::string::npos) << msg;
        EXPECT_NE(msg.find("1x1x3x3"), std::string::npos) << msg;
    }
}

}  // namespace
}  // namespace tandem::test

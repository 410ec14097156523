#include <gtest/gtest.h>

#include <cmath>

#include "layers/batch_norm2d.h"
#include "support/close.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

// A layer whose gamma, beta and running statistics are not the trivial 1, 0, 0, 1, so that
// every term of the gradient shows.
std::unique_ptr<BatchNorm2d> make_bn(std::int64_t channels, const std::string& impl = {}) {
    auto bn = std::make_unique<BatchNorm2d>(BatchNorm2dOptions{channels});
    bn->set_name("bn1");
    if (!impl.empty()) bn->set_kernel_impl(impl);
    auto params = bn->parameters();
    params[0]->value.copy_from(random_tensor({channels}, host_device(), 21, 0.5f, 1.5f));
    params[1]->value.copy_from(random_tensor({channels}, host_device(), 22, -0.5f, 0.5f));
    auto buffers = bn->buffers();
    buffers[0]->value.copy_from(random_tensor({channels}, host_device(), 23, -0.5f, 0.5f));
    buffers[1]->value.copy_from(random_tensor({channels}, host_device(), 24, 0.5f, 2.f));
    return bn;
}

// Channels with different means and spreads.
Tensor bn_input(const Shape& shape, Layout layout, std::uint64_t seed = 5) {
    auto v = random_tensor(shape, test_device(), seed).to_vector();
    const std::int64_t plane = shape[2] * shape[3];
    for (std::size_t i = 0; i < v.size(); ++i) {
        const auto c = std::int64_t(i) / plane % shape[1];
        v[i] = v[i] * float(1 + c) + 0.3f * float(c);
    }
    return Tensor::from_vector(shape, test_device(), v, layout);
}

void gradient_case(Mode mode, Layout layout) {
    auto bn = make_bn(3);
    GradCheckOptions o;
    o.mode = mode;
    o.layout = layout;
    // The batch statistics move with every perturbed element in training; a smaller step
    // keeps the second-order terms of that below the tolerance.
    o.eps = 1e-3f;
    o.tolerance = 5e-3f;
    check_gradients(*bn, bn_input({4, 3, 3, 2}, layout), test_device(), o);
}

TEST(BatchNorm2d, GradientTrainContiguous) {
    gradient_case(Mode::train, Layout::contiguous);
}
TEST(BatchNorm2d, GradientTrainChannelsLast) {
    gradient_case(Mode::train, Layout::channels_last);
}
TEST(BatchNorm2d, GradientEvalContiguous) {
    gradient_case(Mode::eval, Layout::contiguous);
}
TEST(BatchNorm2d, GradientEvalChannelsLast) {
    gradient_case(Mode::eval, Layout::channels_last);
}

TEST(BatchNorm2d, DnnlMatchesReference) {
    for (Mode mode : {Mode::train, Mode::eval})
        for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
            const std::string what = std::string(mode == Mode::train ? "train" : "eval") +
                                     (layout == Layout::contiguous ? " NCHW" : " NHWC");
            SCOPED_TRACE(what);
            auto fast = make_bn(5), ref = make_bn(5, "reference");
            const Shape shape{3, 5, 4, 6};
            Tensor x = bn_input(shape, layout, 31);
            Tensor dy = random_tensor(shape, test_device(), 32, -1.f, 1.f, layout);
            Tape t1, t2;
            Pass p1{test_device(), mode, 0, t1, 0}, p2{test_device(), mode, 0, t2, 0};
            Tensor y1 = fast->forward(x, p1), y2 = ref->forward(x, p2);
            EXPECT_EQ(y1.layout(), layout);
            expect_close(y1.to_vector(), y2.to_vector(), 1e-4, "y");
            for (std::size_t b = 0; b < 2; ++b)
                expect_close(fast->buffers()[b]->value.to_vector(),
                             ref->buffers()[b]->value.to_vector(), 1e-5, "running stats");
            Tensor dx1 = fast->backward(x, dy, p1), dx2 = ref->backward(x, dy, p2);
            expect_close(dx1.to_vector(), dx2.to_vector(), 1e-4, "dx");
            for (std::size_t k = 0; k < 2; ++k)
                expect_close(fast->parameters()[k]->grad.to_vector(),
                             ref->parameters()[k]->grad.to_vector(), 1e-4,
                             fast->parameters()[k]->name + " grad");
        }
}

TEST(BatchNorm2d, EvalUsesRunningStatistics) {
    for (const std::string impl : {"dnnl", "reference"}) {
        auto bn = make_bn(2, impl);
        const Shape shape{2, 2, 3, 3};
        Tensor x = bn_input(shape, Layout::contiguous);
        Tape tape;
        Pass pass{test_device(), Mode::eval, 0, tape, 0};
        const auto y = bn->forward(x, pass).to_vector();
        const auto xv = x.to_vector();
        const auto g = bn->parameters()[0]->value.to_vector();
        const auto b = bn->parameters()[1]->value.to_vector();
        const auto m = bn->buffers()[0]->value.to_vector();
        const auto v = bn->buffers()[1]->value.to_vector();
        for (std::size_t i = 0; i < xv.size(); ++i) {
            const std::size_t c = i / 9 % 2;
            const double want = g[c] * (xv[i] - m[c]) / std::sqrt(v[c] + 1e-5) + b[c];
            ASSERT_NEAR(y[i], want, 1e-5) << impl << " [" << i << "]";
        }
        EXPECT_TRUE(tape.empty()) << "evaluation keeps nothing for backward";
    }
}

// Three training steps against the running statistics computed by hand from PyTorch's rule.
TEST(BatchNorm2d, RunningStatisticsAfterSteps) {
    const std::int64_t channels = 2;
    const Shape shape{3, channels, 2, 2};
    const std::int64_t n = 3 * 2 * 2;
    BatchNorm2d bn({channels, 1e-5f, 0.2f});
    bn.set_name("bn1");
    std::vector<double> mean(channels, 0.0), var(channels, 1.0);
    for (int step = 0; step < 3; ++step) {
        Tensor x = bn_input(shape, step % 2 ? Layout::channels_last : Layout::contiguous,
                            100 + std::uint64_t(step));
        Tape tape;
        Pass pass{test_device(), Mode::train, 0, tape, 0};
        bn.forward(x, pass);
        const auto v = x.to_vector();
        for (std::int64_t c = 0; c < channels; ++c) {
            double sum = 0, squares = 0;
            for (std::int64_t i = 0; i < shape.numel(); ++i)
                if (i / 4 % channels == c) sum += v[std::size_t(i)];
            const double m = sum / double(n);
            for (std::int64_t i = 0; i < shape.numel(); ++i)
                if (i / 4 % channels == c)
                    squares += (v[std::size_t(i)] - m) * (v[std::size_t(i)] - m);
            mean[std::size_t(c)] = 0.8 * mean[std::size_t(c)] + 0.2 * m;
            var[std::size_t(c)] = 0.8 * var[std::size_t(c)] + 0.2 * squares / double(n - 1);
        }
    }
    const auto rm = bn.buffers()[0]->value.to_vector();
    const auto rv = bn.buffers()[1]->value.to_vector();
    for (std::size_t c = 0; c < std::size_t(channels); ++c) {
        EXPECT_NEAR(rm[c], mean[c], 1e-5) << "running_mean[" << c << "]";
        EXPECT_NEAR(rv[c], var[c], 1e-5) << "running_var[" << c << "]";
    }
}

TEST(BatchNorm2d, UpdateRunningStatsDirectly) {
    BatchNorm2d bn({2, 1e-5f, 0.5f});
    bn.update_running_stats(Tensor::from_vector({2}, test_device(), std::vector<float>{2.f, -4.f}),
                            Tensor::from_vector({2}, test_device(), std::vector<float>{3.f, 1.f}),
                            4);
    // mean: 0.5 * 0 + 0.5 * m; var: 0.5 * 1 + 0.5 * v * 4 / 3.
    expect_close(bn.buffers()[0]->value.to_vector(), {1.f, -2.f}, 1e-6, "running_mean");
    expect_close(bn.buffers()[1]->value.to_vector(), {2.5f, 0.5f + 2.f / 3.f}, 1e-6, "running_var");
    EXPECT_THROW(bn.update_running_stats(Tensor::zeros({3}, test_device()),
                                         Tensor::zeros({3}, test_device()), 4),
                 ShapeError);
    EXPECT_THROW(bn.update_running_stats(Tensor::zeros({2}, test_device()),
                                         Tensor::zeros({2}, test_device()), 1),
                 ShapeError);
}

TEST(BatchNorm2d, ParametersAndBuffers) {
    BatchNorm2d bn({4});
    ASSERT_EQ(bn.parameters().size(), 2u);
    EXPECT_EQ(bn.parameters()[0]->name, "weight");
    EXPECT_EQ(bn.parameters()[1]->name, "bias");
    for (auto* p : bn.parameters()) EXPECT_FALSE(p->decay) << p->name;
    EXPECT_EQ(bn.parameters()[0]->value.to_vector(), std::vector<float>(4, 1.f));
    EXPECT_EQ(bn.parameters()[1]->value.to_vector(), std::vector<float>(4, 0.f));
    ASSERT_EQ(bn.buffers().size(), 2u);
    EXPECT_EQ(bn.buffers()[0]->name, "running_mean");
    EXPECT_EQ(bn.buffers()[1]->name, "running_var");
    EXPECT_EQ(bn.buffers()[0]->value.to_vector(), std::vector<float>(4, 0.f));
    EXPECT_EQ(bn.buffers()[1]->value.to_vector(), std::vector<float>(4, 1.f));
}

TEST(BatchNorm2d, OptionErrors) {
    EXPECT_THROW(BatchNorm2d({0}), ConfigError);
    EXPECT_THROW(BatchNorm2d({4, 0.f}), ConfigError);
    EXPECT_THROW(BatchNorm2d({4, 1e-5f, -0.1f}), ConfigError);
    EXPECT_THROW(BatchNorm2d({4, 1e-5f, 1.5f}), ConfigError);
    EXPECT_NO_THROW(BatchNorm2d({4, 1e-5f, 1.f}));
}

TEST(BatchNorm2d, ShapeErrorsNameLayerAndShapes) {
    BatchNorm2d bn({4});
    bn.set_name("bn7");
    try {
        bn.output_shape({2, 3, 5, 5});
        FAIL() << "expected ShapeError";
    } catch (const ShapeError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("bn7"), std::string::npos) << msg;
        EXPECT_NE(msg.find("N x 4 x H x W"), std::string::npos) << msg;
        EXPECT_NE(msg.find("2x3x5x5"), std::string::npos) << msg;
    }
    EXPECT_THROW(bn.output_shape({2, 4, 5}), ShapeError);
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    EXPECT_THROW(bn.forward(Tensor::zeros({1, 4, 1, 1}, test_device()), pass), ShapeError);
}

}  // namespace
}  // namespace tandem::test

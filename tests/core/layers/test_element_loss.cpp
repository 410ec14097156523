// MSE and BCEWithLogits: against PyTorch's MSELoss and BCEWithLogitsLoss (reduction 'mean', the
// fixtures of tests/torch/cases_losses.py) in both layouts, against finite differences, and
// their errors.
#include <gtest/gtest.h>

#include "layers/element_loss.h"
#include "support/grad_check.h"
#include "support/torch_fixture.h"

namespace tandem::test {
namespace {

Pass eval_pass(Tape& tape) {
    return Pass{test_device(), Mode::eval, 0, tape, 0};
}

// forward's sum over N samples is PyTorch's mean times N; backward with scale 1 / N is the
// gradient of the mean.
void matches_torch(ElementLossKind kind, const std::string& fixture, Layout layout) {
    SCOPED_TRACE(fixture + (layout == Layout::channels_last ? " channels_last" : ""));
    const TorchFixture f(fixture);
    ElementLoss loss(kind);
    const Tensor output = f["output"].to_layout(layout);
    const Tensor& target = f["target"];  // contiguous: the loss reorders it
    const std::int64_t n = output.shape()[0];
    // Training mode: forward keeps the reordered targets, backward takes them.
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    const LossSums sums = loss.forward(output, target, pass);
    EXPECT_EQ(tape.empty(), layout == Layout::contiguous);
    EXPECT_EQ(sums.count, n);
    EXPECT_NEAR(sums.loss / double(n), f["loss"].to_vector()[0], 1e-6 * std::max(1.0, sums.loss));
    const Tensor grad = loss.backward(output, target, 1.f / float(n), pass);
    EXPECT_EQ(grad.layout(), output.layout());
    EXPECT_TRUE(tape.empty());
    expect_close(grad.to_layout(Layout::contiguous), f["grad"], "gradient", 1e-5f, 1e-7f);
}

TEST(ElementLoss, MseMatchesPyTorch) {
    matches_torch(ElementLossKind::mse, "mse_2d", Layout::contiguous);
    matches_torch(ElementLossKind::mse, "mse_4d", Layout::contiguous);
    matches_torch(ElementLossKind::mse, "mse_4d", Layout::channels_last);
}

TEST(ElementLoss, BceWithLogitsMatchesPyTorch) {
    matches_torch(ElementLossKind::bce_with_logits, "bce_2d", Layout::contiguous);
    matches_torch(ElementLossKind::bce_with_logits, "bce_4d", Layout::channels_last);
    matches_torch(ElementLossKind::bce_with_logits, "bce_large",
                  Layout::contiguous);  // no overflow
}

// backward against central differences of forward's sum (double accumulation).
TEST(ElementLoss, GradientMatchesFiniteDifferences) {
    for (ElementLossKind kind : {ElementLossKind::mse, ElementLossKind::bce_with_logits}) {
        ElementLoss loss(kind);
        SCOPED_TRACE(std::string(loss.kind()));
        const Tensor y = random_tensor({3, 4}, test_device(), 11, -2.f, 2.f);
        const Tensor t = random_tensor({3, 4}, test_device(), 12, 0.f, 1.f);
        Tape tape;
        Pass pass = eval_pass(tape);
        const auto analytic = loss.backward(y, t, 0.5f, pass).to_vector();
        auto values = y.to_vector();
        const float eps = 1e-2f;
        for (std::size_t i = 0; i < values.size(); ++i) {
            auto at = [&](float v) {
                auto shifted = values;
                shifted[i] = v;
                return loss.forward(Tensor::from_vector({3, 4}, test_device(), shifted), t, pass)
                    .loss;
            };
            const double numeric = 0.5 * (at(values[i] + eps) - at(values[i] - eps)) / (2 * eps);
            EXPECT_NEAR(analytic[i], numeric, 1e-3 * std::max(1.0, std::abs(numeric)))
                << "element " << i;
        }
    }
}

TEST(ElementLoss, AccuracyAndErrors) {
    ElementLoss bce(ElementLossKind::bce_with_logits), mse(ElementLossKind::mse);
    Tape tape;
    Pass pass = eval_pass(tape);
    // Sample 0 right on both outputs, sample 1 wrong on its second, sample 2 right.
    const std::vector<float> outputs{2.f, -1.f, 1.f, 1.f, -3.f, -0.5f},
        targets{1.f, 0.f, 1.f, 0.f, 0.f, 0.2f};
    const Tensor y = Tensor::from_vector({3, 2}, test_device(), outputs);
    const Tensor t = Tensor::from_vector({3, 2}, test_device(), targets);
    EXPECT_EQ(bce.forward(y, t, pass).correct, 2);
    EXPECT_TRUE(bce.has_accuracy());
    EXPECT_FALSE(mse.has_accuracy());
    EXPECT_EQ(mse.forward(y, t, pass).correct, 0);
    try {
        mse.forward(y, Tensor::zeros({3, 3}, test_device()), pass);
        FAIL() << "MSE took targets of another shape";
    } catch (const ShapeError& e) {
        EXPECT_NE(
            std::string(e.what()).find("MSE: targets 3x3 and the net's output 3x2 differ in shape"),
            std::string::npos)
            << e.what();
    }
    try {
        mse.check_batch_targets(Tensor::zeros({3}, test_device(), DType::i32), 3);
        FAIL() << "MSE took class labels";
    } catch (const ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("MSE takes f32 targets shaped as the net's output"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(bce.description(), "BCEWithLogits()");
    EXPECT_EQ(std::string(bce.clone()->kind()), "BCEWithLogits");
}

}  // namespace
}  // namespace tandem::test

#include <gtest/gtest.h>

#include <cmath>

#include "device/device.h"
#include "layers/cross_entropy.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

Tensor labels_of(const std::vector<int>& values) {
    Tensor t = Tensor::empty({static_cast<std::int64_t>(values.size())}, test_device(), DType::i32);
    std::copy(values.begin(), values.end(), t.data<int>());
    return t;
}

// The loss written out from the definition, in double, for one row.
double hand_loss(const std::vector<double>& row, int label, double s) {
    double sum = 0;
    for (double v : row) sum += std::exp(v);
    const double k = static_cast<double>(row.size());
    double loss = 0;
    for (std::size_t j = 0; j < row.size(); ++j) {
        const double target = s / k + (static_cast<int>(j) == label ? 1.0 - s : 0.0);
        loss -= target * std::log(std::exp(row[j]) / sum);
    }
    return loss;
}

LossSums run(CrossEntropy& ce, const Tensor& logits, const Tensor& labels, Mode mode = Mode::eval) {
    Tape tape;
    Pass pass{test_device(), mode, 0, tape, 0};
    return ce.forward(logits, labels, pass);
}

TEST(CrossEntropy, RejectsBadSmoothing) {
    EXPECT_THROW(CrossEntropy(-0.1f), ConfigError);
    EXPECT_THROW(CrossEntropy(1.f), ConfigError);
    EXPECT_THROW(CrossEntropy(std::nanf("")), ConfigError);
    EXPECT_FLOAT_EQ(CrossEntropy(0.1f).label_smoothing(), 0.1f);
}

TEST(CrossEntropy, LossMatchesHandComputation) {
    const std::vector<std::vector<double>> rows = {
        {1.0, 2.0, 0.5, -1.0}, {0.0, 0.0, 0.0, 0.0}, {-3.0, 4.0, 2.0, 1.0}};
    const std::vector<int> labels = {1, 3, 2};
    std::vector<float> flat;
    for (const auto& r : rows)
        for (double v : r) flat.push_back(static_cast<float>(v));
    Tensor logits = Tensor::from_vector({3, 4}, test_device(), flat);
    for (float s : {0.f, 0.1f}) {
        CrossEntropy ce(s);
        const LossSums sums = run(ce, logits, labels_of(labels));
        double expected = 0;
        for (std::size_t i = 0; i < rows.size(); ++i) expected += hand_loss(rows[i], labels[i], s);
        EXPECT_NEAR(sums.loss, expected, 1e-5) << "smoothing " << s;
        EXPECT_EQ(sums.count, 3);
        // Row 0's arg-max is 1 (correct); row 1 ties, first (0) wins (wrong); row 2's is 1.
        EXPECT_EQ(sums.correct, 1);
    }
}

TEST(CrossEntropy, StableForLargeLogits) {
    CrossEntropy ce;
    const std::vector<float> values{1000.f, 0.f, -1000.f};
    Tensor logits = Tensor::from_vector({1, 3}, test_device(), values);
    EXPECT_NEAR(run(ce, logits, labels_of({0})).loss, 0.0, 1e-6);
    EXPECT_NEAR(run(ce, logits, labels_of({1})).loss, 1000.0, 1e-3);
}

TEST(CrossEntropy, TiesGoToTheFirstMaximum) {
    CrossEntropy ce;
    const std::vector<float> values{1, 3, 3, 2, 2, 2};
    Tensor logits = Tensor::from_vector({2, 3}, test_device(), values);
    EXPECT_EQ(run(ce, logits, labels_of({1, 0})).correct, 2);
    EXPECT_EQ(run(ce, logits, labels_of({2, 1})).correct, 0);
}

// Backward against central differences of the summed loss, times the scale.
void check_loss_gradient(float smoothing, float scale, Mode mode) {
    const std::int64_t n = 3, k = 5;
    CrossEntropy ce(smoothing);
    Tensor logits = random_tensor({n, k}, test_device(), 21, -2.f, 2.f);
    Tensor labels = labels_of({4, 0, 2});
    Tape tape;
    Pass pass{test_device(), mode, 0, tape, 0};
    ce.forward(logits, labels, pass);
    const auto grad = ce.backward(logits, labels, scale, pass).to_vector();
    EXPECT_TRUE(tape.empty()) << "backward releases the probabilities";

    auto v = logits.to_vector();
    const float eps = 1e-2f;
    for (std::size_t i = 0; i < v.size(); ++i) {
        const float saved = v[i];
        v[i] = saved + eps;
        const double plus = run(ce, Tensor::from_vector({n, k}, test_device(), v), labels).loss;
        v[i] = saved - eps;
        const double minus = run(ce, Tensor::from_vector({n, k}, test_device(), v), labels).loss;
        v[i] = saved;
        const double numeric = scale * (plus - minus) / (2.0 * eps);
        EXPECT_NEAR(grad[i], numeric, 1e-3 * std::max(1.0, std::fabs(numeric)))
            << "d loss / d logits[" << i << "], smoothing " << smoothing << ", scale " << scale
            << " (L+ " << plus << ", L- " << minus << ")";
    }
}

TEST(CrossEntropy, GradientMatchesFiniteDifferences) {
    check_loss_gradient(0.f, 1.f, Mode::train);
    check_loss_gradient(0.2f, 1.f, Mode::train);
    check_loss_gradient(0.1f, 0.25f, Mode::train);
    // No probabilities kept in evaluation: backward recomputes them.
    check_loss_gradient(0.1f, 0.5f, Mode::eval);
}

TEST(CrossEntropy, GradientRowsSumToZero) {
    CrossEntropy ce(0.1f);
    Tensor logits = random_tensor({4, 10}, test_device(), 22, -3.f, 3.f);
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    ce.forward(logits, labels_of({0, 9, 3, 3}), pass);
    const auto g = ce.backward(logits, labels_of({0, 9, 3, 3}), 1.f, pass).to_vector();
    for (int i = 0; i < 4; ++i) {
        double sum = 0;
        for (int j = 0; j < 10; ++j) sum += g[i * 10 + j];
        EXPECT_NEAR(sum, 0.0, 1e-6) << "row " << i;
    }
}

TEST(CrossEntropy, LabelOutOfRangeIsADataError) {
    CrossEntropy ce;
    Tensor logits = random_tensor({5, 10}, test_device(), 23);
    for (int bad : {12, -1, 10}) {
        try {
            run(ce, logits, labels_of({0, 1, 2, bad, 4}));
            FAIL() << "expected a DataError for label " << bad;
        } catch (const DataError& e) {
            EXPECT_EQ(std::string(e.what()),
                      "label " + std::to_string(bad) + " of sample 4 is outside [0, 10)");
        }
    }
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    EXPECT_THROW(ce.backward(logits, labels_of({0, 1, 2, 12, 4}), 1.f, pass), DataError);
}

TEST(CrossEntropy, ShapeErrorsNameBothShapes) {
    CrossEntropy ce;
    auto expect_shape_error = [&](const Tensor& logits, const Tensor& labels, const std::string& a,
                                  const std::string& b) {
        try {
            run(ce, logits, labels);
            FAIL() << "expected a ShapeError";
        } catch (const ShapeError& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(a), std::string::npos) << what;
            EXPECT_NE(what.find(b), std::string::npos) << what;
        }
    };
    expect_shape_error(random_tensor({2, 3, 4}, test_device(), 24), labels_of({0, 1}), "2x3x4",
                       "labels 2");
    expect_shape_error(random_tensor({4, 3}, test_device(), 25), labels_of({0, 1, 2}), "4x3",
                       "labels 3");
}

}  // namespace
}  // namespace tandem::test

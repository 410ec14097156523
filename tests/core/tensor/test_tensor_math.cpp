// Tensor math (issue 18): every operation against PyTorch on fixed inputs
// (tests/torch/cases_tensor_math.py), channels_last inputs giving the same logical results,
// the edge cases worked out by hand, and the errors for every kind of wrong input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "support/grad_check.h"
#include "support/stand_in_gpu.h"
#include "support/torch_fixture.h"
#include "tensor/tensor_math.h"

namespace tandem::test {
namespace {

const TorchFixture& fixture() {
    static const TorchFixture f("tensor_math");
    return f;
}

const Tensor& F(const std::string& key) {
    return fixture()[key];
}

Tensor make(const Shape& shape, std::vector<float> values) {
    return Tensor::from_vector(shape, test_device(), values);
}

std::vector<int> ints(const Tensor& t) {
    const int* p = t.data<int>();
    return std::vector<int>(p, p + t.numel());
}

// The message of the error `f` throws (empty when it throws none, which fails the test).
template <class E = Error, class Fn>
std::string math_error_of(Fn f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    ADD_FAILURE() << "no error thrown";
    return {};
}

TEST(TensorMath, ElementwiseMatchesPyTorch) {
    const Tensor& a = F("a");
    expect_close(binary(BinaryOp::add, a, F("b")), F("add"), "add");
    expect_close(binary(BinaryOp::sub, a, F("b")), F("sub"), "sub");
    expect_close(binary(BinaryOp::mul, a, F("b")), F("mul"), "mul");
    expect_close(binary(BinaryOp::div, a, F("pos")), F("div"), "div");
    expect_close(binary(BinaryOp::add, a, F("row")), F("add_row"), "a + row (broadcast)");
    expect_close(binary(BinaryOp::mul, a, F("col")), F("mul_col"), "a * col (broadcast)");
    expect_close(binary(BinaryOp::sub, F("col"), F("row")), F("sub_col_row"),
                 "col - row (both broadcast)");
    expect_close(binary(BinaryOp::mul, a, 2.5f), F("mul_scalar"), "a * 2.5");
    expect_close(binary(BinaryOp::sub, 1.5f, a), F("rsub_scalar"), "1.5 - a");
    expect_close(binary(BinaryOp::div, 2.f, F("pos")), F("rdiv_scalar"), "2 / pos");
}

TEST(TensorMath, UnaryMatchesPyTorch) {
    const Tensor& a = F("a");
    expect_close(unary(UnaryOp::exp, a), F("exp"), "exp");
    expect_close(unary(UnaryOp::log, F("pos")), F("log"), "log");
    expect_close(unary(UnaryOp::tanh, a), F("tanh"), "tanh");
    expect_close(unary(UnaryOp::sigmoid, a), F("sigmoid"), "sigmoid");
    expect_close(unary(UnaryOp::abs, a), F("abs"), "abs");
    expect_close(unary(UnaryOp::sqrt, F("pos")), F("sqrt"), "sqrt");
    expect_close(unary(UnaryOp::neg, a), F("neg"), "neg");
    expect_close(pow(F("pos"), 1.7f), F("pow"), "pow 1.7");
    expect_close(pow(a, 2.f), F("square"), "pow 2");
}

TEST(TensorMath, MatmulMatchesPyTorch) {
    expect_close(matmul(F("m1"), F("m2")), F("matmul"), "3x5 @ 5x4", 1e-5f, 1e-5f);
    expect_close(matmul(F("bm1"), F("bm2")), F("bmm"), "2x3x5 @ 2x5x4", 1e-5f, 1e-5f);
    expect_close(matmul(F("bm1"), F("m2")), F("bmm_shared"), "2x3x5 @ 5x4", 1e-5f, 1e-5f);
}

TEST(TensorMath, ReductionsMatchPyTorch) {
    const Tensor& a = F("a");
    expect_close(sum(a, 1), F("sum1"), "sum dim 1", 1e-5f, 1e-5f);
    expect_close(mean(a, 2), F("mean2"), "mean dim 2", 1e-5f, 1e-5f);
    expect_close(sum(a, 0, true), F("sum0_keep"), "sum dim 0 keepdim", 1e-5f, 1e-5f);
    EXPECT_NEAR(sum_all(a), F("sum_all").to_vector()[0], 1e-5);
    EXPECT_NEAR(mean_all(a), F("mean_all").to_vector()[0], 1e-6);
    const MaxResult m = max(a, 1);
    expect_close(m.values, F("max1_values"), "max values dim 1");
    EXPECT_EQ(m.indices.dtype(), DType::i32);
    EXPECT_EQ(ints(m.indices), ints(F("max1_indices")));
    EXPECT_EQ(ints(max(a, 2).indices), ints(F("argmax2")));
    EXPECT_EQ(max(a, 1, true).values.shape(), (Shape{2, 1, 4}));
}

TEST(TensorMath, CopiesMatchPyTorch) {
    const Tensor& a = F("a");
    expect_close(transpose(a, 0, 2), F("transpose02"), "transpose 0 2");
    expect_close(narrow(a, 1, 1, 2), F("narrow1"), "narrow dim 1 from 1, 2");
    const Tensor b2 = narrow(F("b"), 1, 0, 2);
    const std::vector<Tensor> two{a, b2};
    expect_close(cat(two, 1), F("cat1"), "cat dim 1");
    const std::vector<Tensor> three{a, F("b"), a};
    expect_close(cat(three, 2), F("cat2"), "cat dim 2");
}

// Results are logical whatever the layout: a channels_last input (NHWC in memory) gives what
// the contiguous one gives, and mixing layouts is fine.
TEST(TensorMath, ChannelsLastGivesLogicalResults) {
    const Tensor nhwc = F("x4").to_layout(Layout::channels_last);
    expect_close(sum(nhwc, 1), F("x4_sum1"), "sum over channels, channels_last", 1e-5f, 1e-5f);
    expect_close(transpose(nhwc, 1, 3), F("x4_transpose13"), "transpose, channels_last");
    const std::vector<Tensor> halves{narrow(nhwc, 0, 1, 1), narrow(F("x4"), 0, 0, 1)};
    const Tensor flipped = cat(halves, 0);
    expect_close(binary(BinaryOp::mul, nhwc, flipped), F("x4_mul_x4"), "x4 * flip, mixed layouts");
    EXPECT_EQ(unary(UnaryOp::exp, nhwc).layout(), Layout::contiguous);
    expect_close(unary(UnaryOp::neg, nhwc), unary(UnaryOp::neg, F("x4")), "neg, channels_last");
}

TEST(TensorMath, EdgeCasesByHand) {
    // Ties give the first index; NaN is the largest (PyTorch's max).
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const Tensor t = make({2, 3}, {1, 3, 3, 2, nan, 5});
    const MaxResult m = max(t, 1);
    EXPECT_EQ(ints(m.indices), (std::vector<int>{1, 1}));
    EXPECT_EQ(m.values.to_vector()[0], 3.f);
    EXPECT_TRUE(std::isnan(m.values.to_vector()[1]));
    EXPECT_EQ(max_all(make({4}, {2, 7, 7, -1})), (std::pair<float, std::int64_t>{7.f, 1}));
    // Rank 0 with rank 2, and empty tensors.
    const Tensor s = make({}, {10});
    EXPECT_EQ(binary(BinaryOp::sub, s, t).to_vector()[1], 7.f);
    const Tensor empty = Tensor::zeros({0, 3}, test_device());
    EXPECT_EQ(sum(empty, 0).to_vector(), (std::vector<float>{0, 0, 0}));
    EXPECT_TRUE(std::isnan(mean(empty, 0).to_vector()[0]));
    EXPECT_EQ(sum_all(empty), 0.0);
    EXPECT_EQ(binary(BinaryOp::add, empty, 1.f).shape(), (Shape{0, 3}));
    EXPECT_EQ(narrow(t, 1, 3, 0).shape(), (Shape{2, 0}));
    const std::vector<Tensor> with_empty{t, Tensor::zeros({2, 0}, test_device()), t};
    EXPECT_EQ(cat(with_empty, 1).shape(), (Shape{2, 6}));
    EXPECT_EQ(cat(with_empty, 1).to_vector()[3], 1.f);
    EXPECT_EQ(matmul(Tensor::zeros({2, 0}, test_device()), Tensor::zeros({0, 3}, test_device()))
                  .to_vector(),
              std::vector<float>(6, 0.f));  // an empty sum: zeros, as PyTorch
    EXPECT_EQ(
        matmul(Tensor::zeros({0, 4}, test_device()), Tensor::zeros({4, 3}, test_device())).shape(),
        (Shape{0, 3}));
    // Stable sigmoid at the tails, and IEEE results for log(0) and 1/0.
    EXPECT_EQ(unary(UnaryOp::sigmoid, make({2}, {-200, 200})).to_vector(),
              (std::vector<float>{0.f, 1.f}));
    EXPECT_EQ(unary(UnaryOp::log, make({1}, {0})).to_vector()[0],
              -std::numeric_limits<float>::infinity());
    EXPECT_EQ(binary(BinaryOp::div, 1.f, make({1}, {0})).to_vector()[0],
              std::numeric_limits<float>::infinity());
    // 2x2 by hand: [1 2; 3 4] @ [5 6; 7 8] = [19 22; 43 50]; its transpose.
    const Tensor p = matmul(make({2, 2}, {1, 2, 3, 4}), make({2, 2}, {5, 6, 7, 8}));
    EXPECT_EQ(p.to_vector(), (std::vector<float>{19, 22, 43, 50}));
    EXPECT_EQ(transpose(p, 0, 1).to_vector(), (std::vector<float>{19, 43, 22, 50}));
    // The result is on the operands' device.
    EXPECT_EQ(&binary(BinaryOp::add, t, t).device(), &test_device());
}

TEST(TensorMath, ErrorsNameFunctionArgumentAndShapes) {
    const Tensor a = Tensor::zeros({2, 3}, test_device());
    const Tensor b = Tensor::zeros({4, 3}, test_device());
    EXPECT_EQ(math_error_of<ShapeError>([&] { binary(BinaryOp::add, a, b); }),
              "add: shapes 2x3 and 4x3 do not broadcast (dimension 2 from the end: 2 vs 4; each "
              "pair must be equal or one of them 1)");
    const std::string inner = math_error_of<ShapeError>([&] { matmul(a, a); });
    EXPECT_NE(inner.find("matmul: the inner dimensions differ: 2x3 and 2x3 (3 vs 2)"),
              std::string::npos)
        << inner;
    EXPECT_NE(math_error_of<ShapeError>([&] {
                  matmul(a, Tensor::zeros({3}, test_device()));
              }).find("matmul: takes (n x k) @ (k x m)"),
              std::string::npos);
    EXPECT_NE(math_error_of<ShapeError>([&] {
                  matmul(Tensor::zeros({2, 2, 3}, test_device()),
                         Tensor::zeros({3, 3, 1}, test_device()));
              }).find("batch dimensions differ: 2x2x3 and 3x3x1"),
              std::string::npos);
    EXPECT_EQ(math_error_of<ShapeError>([&] { sum(a, 2); }),
              "sum: dim 2 is out of range for Tensor(2x3, f32, cpu:0) (rank 2, dimensions from 0)");
    EXPECT_NE(math_error_of<ShapeError>([&] { narrow(a, 1, 2, 2); }).find("do not fit dimension 1"),
              std::string::npos);
    const std::vector<Tensor> mismatched{a, b.reshape({3, 4})};
    EXPECT_EQ(math_error_of<ShapeError>([&] { cat(mismatched, 0); }),
              "cat: shapes 2x3 and 3x4 differ outside the dimension they are joined along");
    EXPECT_NE(math_error_of<ShapeError>([&] {
                  max(Tensor::zeros({2, 0}, test_device()), 1);
              }).find("is empty"),
              std::string::npos);

    const Tensor labels = Tensor::zeros({2, 3}, test_device(), DType::i32);
    EXPECT_EQ(math_error_of([&] { binary(BinaryOp::mul, a, labels); }),
              "mul: argument 'right operand' must be an f32 tensor, got Tensor(2x3, i32, cpu:0)");
    EXPECT_NE(math_error_of([&] {
                  unary(UnaryOp::exp, labels);
              }).find("exp: argument 'x' must be an f32"),
              std::string::npos);

    StandInGpu gpu(0);
    const Tensor far = Tensor::zeros({2, 3}, gpu);
    const std::string where = math_error_of([&] { sum_all(far); });
    EXPECT_NE(where.find("sum: argument 'x' is Tensor(2x3, f32, cuda:0), in memory the host "
                         "cannot read"),
              std::string::npos)
        << where;
    EXPECT_NE(math_error_of([&] { matmul(far, a); }).find("matmul: argument 'a'"),
              std::string::npos);

    const Tensor elsewhere = Tensor::zeros({2, 3}, host_device());
    EXPECT_NE(math_error_of([&] {
                  binary(BinaryOp::add, a, elsewhere);
              }).find("add: the operands are on different devices"),
              std::string::npos);
}

}  // namespace
}  // namespace tandem::test

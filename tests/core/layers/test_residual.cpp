#include <gtest/gtest.h>

#include "base/rng.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/relu.h"
#include "layers/residual.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

// A test-only layer with parameters: y[n, c, ...] = weight[c] * x[n, c, ...] + bias[c].
// Host loops in logical order, so it works in either layout; weights in [0.5, 1.5] and small
// biases keep a following ReLU away from its kink for inputs with |x| >= 0.2.
class Affine final : public Layer {
public:
    explicit Affine(std::int64_t channels)
        : weight_(make_parameter("weight", {channels}, true)),
          bias_(make_parameter("bias", {channels}, false)) {}

    std::string_view kind() const override { return "Affine"; }
    LayerPtr clone() const override {
        return finish_clone(std::make_shared<Affine>(weight_.value.numel()));
    }
    Shape output_shape(const Shape& input) const override {
        TANDEM_CHECK_AS(ShapeError, input.rank() >= 2 && input[1] == weight_.value.numel())
            << label() << ": expected " << weight_.value.numel() << " channels, got "
            << input.to_string();
        return input;
    }
    void initialize(std::uint64_t seed) override {
        std::vector<float> w(weight_.value.numel()), b(w.size());
        for (std::size_t i = 0; i < w.size(); ++i) {
            w[i] = 0.5f + rng_uniform(seed, i);
            b[i] = 0.1f * (rng_uniform(seed, 1000 + i) - 0.5f);
        }
        weight_.value.copy_from(w);
        bias_.value.copy_from(b);
    }
    Tensor forward(const Tensor& x, Pass& pass) override {
        const auto xv = x.to_vector(), w = weight_.value.to_vector(), b = bias_.value.to_vector();
        std::vector<float> y(xv.size());
        for (std::size_t i = 0; i < xv.size(); ++i) {
            const std::size_t c = channel(x.shape(), i);
            y[i] = w[c] * xv[i] + b[c];
        }
        return Tensor::from_vector(x.shape(), pass.device, y, x.layout());
    }
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override {
        const auto xv = x.to_vector(), g = dy.to_vector(), w = weight_.value.to_vector();
        auto dw = weight_.grad.to_vector(), db = bias_.grad.to_vector();
        std::vector<float> dx(xv.size());
        for (std::size_t i = 0; i < xv.size(); ++i) {
            const std::size_t c = channel(x.shape(), i);
            dx[i] = w[c] * g[i];
            dw[c] += xv[i] * g[i];
            db[c] += g[i];
        }
        weight_.grad.copy_from(dw);
        bias_.grad.copy_from(db);
        return Tensor::from_vector(x.shape(), pass.device, dx, x.layout());
    }
    std::vector<Parameter*> parameters() override { return {&weight_, &bias_}; }

private:
    static std::size_t channel(const Shape& s, std::size_t logical) {
        const auto inner = static_cast<std::size_t>(s.sample_numel() / s[1]);
        return (logical / inner) % static_cast<std::size_t>(s[1]);
    }
    Parameter weight_, bias_;
};

std::shared_ptr<Sequential> seq(std::vector<LayerPtr> layers) {
    return std::make_shared<Sequential>(std::move(layers));
}

// Inputs with |x| in [0.2, 1], alternating signs.
Tensor residual_away_from_zero(const Shape& shape, Layout layout, std::uint64_t seed) {
    auto v = random_tensor(shape, test_device(), seed, 0.2f, 1.f).to_vector();
    for (std::size_t i = 0; i < v.size(); i += 2) v[i] = -v[i];
    return Tensor::from_vector(shape, test_device(), v, layout);
}

std::shared_ptr<Residual> make_block(bool projection) {
    auto body = seq({std::make_shared<Affine>(3), std::make_shared<ReLU>(),
                     std::make_shared<Dropout>(0.3f), std::make_shared<Affine>(3)});
    auto shortcut = projection ? seq({std::make_shared<Affine>(3)}) : nullptr;
    auto block = std::make_shared<Residual>(body, shortcut);
    block->set_name("block1");
    block->initialize(17);
    return block;
}

TEST(Residual, GradientIdentityShortcut) {
    // Training mode only: a Sequential keeps its inputs for backward only in training.
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        auto block = make_block(false);
        GradCheckOptions o;
        o.layout = layout;
        check_gradients(*block, residual_away_from_zero({2, 3, 2, 3}, layout, 1), test_device(), o);
    }
}

TEST(Residual, GradientProjectionShortcut) {
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        auto block = make_block(true);
        GradCheckOptions o;
        o.layout = layout;
        check_gradients(*block, residual_away_from_zero({2, 3, 2, 3}, layout, 2), test_device(), o);
    }
}

TEST(Residual, ForwardIsBodyPlusShortcut) {
    auto block = make_block(true);
    Tensor x = residual_away_from_zero({2, 3, 2, 2}, Layout::contiguous, 3);
    Tape tape;
    Pass pass{test_device(), Mode::eval, 0, tape, 0};
    const auto y = block->forward(x, pass).to_vector();
    const auto body = block->body().forward(x, pass).to_vector();
    const auto shortcut = block->shortcut()->forward(x, pass).to_vector();
    for (std::size_t i = 0; i < y.size(); ++i) ASSERT_FLOAT_EQ(y[i], body[i] + shortcut[i]);

    auto identity = make_block(false);
    const auto y2 = identity->forward(x, pass).to_vector();
    const auto body2 = identity->body().forward(x, pass).to_vector();
    const auto xv = x.to_vector();
    for (std::size_t i = 0; i < y2.size(); ++i) ASSERT_FLOAT_EQ(y2[i], body2[i] + xv[i]);
}

TEST(Residual, NamesAndOptions) {
    auto net = seq({make_block(true)});
    std::vector<std::string> names;
    for (auto& p : named_parameters(*net)) names.push_back(p.name);
    EXPECT_EQ(names, (std::vector<std::string>{
                         "block1.body.affine1.weight", "block1.body.affine1.bias",
                         "block1.body.affine2.weight", "block1.body.affine2.bias",
                         "block1.shortcut.affine1.weight", "block1.shortcut.affine1.bias"}));
    EXPECT_EQ(make_block(true)->options_text(), "projection shortcut");
    EXPECT_EQ(make_block(false)->options_text(), "identity shortcut");
    EXPECT_EQ(make_block(false)->shortcut(), nullptr);
    EXPECT_THROW(Residual(nullptr, nullptr), ConfigError);
}

TEST(Residual, InitializeDrawsEachChildFromItsName) {
    auto a = make_block(true);  // initialized from 17
    auto b = make_block(true);
    b->initialize(18);
    const auto pa = named_parameters(*a), pb = named_parameters(*b);
    EXPECT_NE(pa[0].parameter->value.to_vector(), pb[0].parameter->value.to_vector());
    b->initialize(17);
    for (std::size_t i = 0; i < pa.size(); ++i)
        EXPECT_EQ(pa[i].parameter->value.to_vector(), pb[i].parameter->value.to_vector());
    // Same layer name under body and shortcut, different keys: different weights.
    EXPECT_NE(pa[0].parameter->value.to_vector(), pa[4].parameter->value.to_vector());
}

TEST(Residual, MismatchedBranchesNameBothShapesAndTheBlock) {
    Residual block(seq({std::make_shared<Flatten>()}), nullptr);
    block.set_name("block3");
    try {
        block.output_shape({2, 3, 2, 2});
        FAIL() << "expected a ShapeError";
    } catch (const ShapeError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("'block3' (Residual)"), std::string::npos) << what;
        EXPECT_NE(what.find("2x12"), std::string::npos) << what;
        EXPECT_NE(what.find("2x3x2x2"), std::string::npos) << what;
    }
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    EXPECT_THROW(block.forward(random_tensor({2, 3, 2, 2}, test_device(), 4), pass), ShapeError);
}

TEST(Residual, ErrorsFromABranchNameIt) {
    Residual block(seq({std::make_shared<Flatten>()}), seq({std::make_shared<Flatten>()}));
    block.set_name("block3");
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    try {
        block.forward(random_tensor({6}, test_device(), 5), pass);
        FAIL() << "expected a ShapeError";
    } catch (const ShapeError& e) {
        const std::string full = e.full_message();
        EXPECT_NE(full.find("in body of 'block3' (Residual)"), std::string::npos) << full;
        EXPECT_NE(full.find("'flatten1' (Flatten)"), std::string::npos) << full;
    }
}

TEST(Residual, ShapesMemoryAndBind) {
    auto block = make_block(true);
    const Shape in{4, 3, 5, 5};
    EXPECT_EQ(block->output_shape(in), in);
    const MemoryEstimate e = block->memory_estimate(in);
    EXPECT_EQ(e.parameter_bytes, 6u * 3u * sizeof(float));
    EXPECT_EQ(e.output_bytes, static_cast<std::size_t>(in.numel()) * sizeof(float));
    EXPECT_GT(e.saved_bytes, 0u);
    EXPECT_NO_THROW(block->bind(test_device(), in, Layout::channels_last));
    EXPECT_THROW(block->bind(test_device(), {4, 2, 5, 5}, Layout::contiguous), ShapeError);
}

}  // namespace
}  // namespace tandem::test

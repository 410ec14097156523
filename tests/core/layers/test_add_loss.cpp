// AddLoss, several losses in one step: a graph whose code feeds a head and a decoder trains on
// cross-entropy + 0.5 x MSE as PyTorch computes it (tests/torch/cases_add_loss.py); the term's
// gradient against finite differences; what it adds and when; its errors.
#include <gtest/gtest.h>

#include <cmath>

#include "layers/add_loss.h"
#include "layers/cross_entropy.h"
#include "layers/element_loss.h"
#include "layers/graph.h"
#include "layers/linear.h"
#include "support/grad_check.h"
#include "support/torch_fixture.h"

namespace tandem::test {
namespace {

LayerPtr linear_named(std::int64_t in, std::int64_t out, const std::string& name) {
    auto l = std::make_shared<Linear>(LinearOptions{in, out, true, "kaiming"});
    l->set_name(name);
    return l;
}

// x -> enc -> code; code -> dec -> recon; AddLoss(code, recon, x) -> head.
std::shared_ptr<Graph> autoencoder_with_head() {
    auto g = std::make_shared<Graph>();
    g->add_input("x");
    g->add(linear_named(6, 3, "enc"), {"x"});
    g->add(linear_named(3, 6, "dec"), {"enc"});
    auto added =
        std::make_shared<AddLoss>(std::make_shared<ElementLoss>(ElementLossKind::mse), 0.5f);
    added->set_name("recon");
    g->add(added, {"enc", "dec", "x"});
    g->add(linear_named(3, 3, "head"), {"recon"});
    g->set_outputs({"head"});
    return g;
}

TEST(AddLoss, TrainsOnBothLossesAsPyTorch) {
    const TorchFixture f("add_loss_autoencoder_head");
    auto g = autoencoder_with_head();
    g->initialize(1);
    for (auto& p : named_parameters(*g)) p.parameter->value.copy_from(f[p.name]);
    const Tensor& x = f["x"];
    const std::int64_t n = x.shape()[0];
    CrossEntropy ce;
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    double added = 0;
    pass.added_loss = &added;  // loss_scale stays 0: the mean over this batch
    const Tensor logits = g->forward(x, pass);
    const LossSums sums = ce.forward(logits, f["labels"], pass);
    EXPECT_NEAR(added / double(n), f["added"].to_vector()[0], 1e-6);
    EXPECT_NEAR((sums.loss + added) / double(n), f["loss"].to_vector()[0], 1e-6);
    (void)g->backward(x, ce.backward(logits, f["labels"], 1.f / float(n), pass), pass);
    for (auto& p : named_parameters(*g))
        expect_close(p.parameter->grad, f[p.name + ".grad"], p.name, 1e-5f, 1e-6f);
}

// The output's gradient is d(weight x scale x the loss's sum) / d output; x's is dy as it came;
// the target gets none.
TEST(AddLoss, GradientMatchesFiniteDifferences) {
    AddLoss layer(std::make_shared<ElementLoss>(ElementLossKind::mse), 0.75f);
    const Tensor x = random_tensor({3, 2}, test_device(), 1);
    const Tensor y = random_tensor({3, 4}, test_device(), 2, -2.f, 2.f);
    const Tensor t = random_tensor({3, 4}, test_device(), 3);
    const Tensor dy = random_tensor({3, 2}, test_device(), 4);
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    pass.loss_scale = 0.25f;
    (void)layer.merge({x, y, t}, pass);
    const std::vector<Tensor> d = layer.unmerge({x, y, t}, dy, pass);
    ASSERT_EQ(d.size(), 3u);
    EXPECT_EQ(d[0].to_vector(), dy.to_vector());
    EXPECT_FALSE(d[2].defined());
    const std::vector<float> analytic = d[1].to_vector();
    auto term = [&](const std::vector<float>& values) {
        Tape scratch;
        Pass eval{test_device(), Mode::eval, 0, scratch, 0};
        double sum = 0;
        eval.added_loss = &sum;
        (void)layer.merge({x, Tensor::from_vector(y.shape(), test_device(), values), t}, eval);
        return 0.25 * sum;
    };
    std::vector<float> values = y.to_vector();
    const float eps = 1e-2f;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const float keep = values[i];
        values[i] = keep + eps;
        const double up = term(values);
        values[i] = keep - eps;
        const double down = term(values);
        values[i] = keep;
        EXPECT_NEAR(analytic[i], (up - down) / (2 * eps), 1e-3) << "element " << i;
    }
}

TEST(AddLoss, AddsItsTermOnceAStep) {
    AddLoss layer(std::make_shared<ElementLoss>(ElementLossKind::mse), 2.f);
    const Tensor x = random_tensor({2, 2}, test_device(), 1);
    const Tensor y = random_tensor({2, 3}, test_device(), 2);
    const Tensor t = random_tensor({2, 3}, test_device(), 3);
    double added = 0;
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    pass.added_loss = &added;
    EXPECT_EQ(layer.merge({x, y, t}, pass).raw(), x.raw()) << "x passes through";
    const double once = added;
    double mse = 0;
    const auto a = y.to_vector(), b = t.to_vector();
    for (std::size_t i = 0; i < a.size(); ++i)
        mse += (a[i] - b[i]) * (a[i] - b[i]) / 3.0;  // a sample's mean
    EXPECT_NEAR(once, 2 * mse, 1e-6);
    pass.recomputing = true;  // the same forward again, for backward: not a second term
    (void)layer.merge({x, y, t}, pass);
    EXPECT_EQ(added, once);
}

TEST(AddLoss, MistakesAreNamed) {
    EXPECT_THROW(AddLoss(std::make_shared<CrossEntropy>(), 1.f), ConfigError);
    EXPECT_THROW(AddLoss(std::make_shared<ElementLoss>(ElementLossKind::mse), -1.f), ConfigError);
    EXPECT_THROW(AddLoss(std::make_shared<ElementLoss>(ElementLossKind::mse), std::nanf("")),
                 ConfigError);
    AddLoss layer(std::make_shared<ElementLoss>(ElementLossKind::mse), 1.f);
    layer.set_name("recon");
    try {
        (void)layer.merged_shape({Shape({2, 3}), Shape({2, 4}), Shape({2, 5})});
        ADD_FAILURE() << "shapes that differ were taken";
    } catch (const ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "the output (input 2) is 2x4 and the target (input 3) is 2x5"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW((void)layer.merged_shape({Shape({2, 3}), Shape({2, 4})}), Error);  // three inputs
}

}  // namespace
}  // namespace tandem::test

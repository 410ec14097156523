// Adam, AdamW (and SGD with Nesterov momentum, and the clipping factor) against PyTorch: three
// steps on fixed gradients with a learning rate that changes every step, the weight decayed
// and the bias not (tests/torch/cases_optim.py writes the fixtures).
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/kernel_cache.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "support/grad_check.h"
#include "support/torch_fixture.h"

namespace tandem::test {
namespace {

const float kLrs[] = {0.01f, 0.005f, 0.0025f};  // cases_optim.py's LRS

struct FixtureParams {
    Parameter weight, bias;
    explicit FixtureParams(const TorchFixture& f)
        : weight{"weight", f["w0"].clone(), Tensor::zeros(f["w0"].shape(), test_device()), true},
          bias{"bias", f["b0"].clone(), Tensor::zeros(f["b0"].shape(), test_device()), false} {}
    std::vector<NamedParameter> both() { return {{"fc.weight", &weight}, {"fc.bias", &bias}}; }
};

// Runs the fixture's three steps through `optimizer`, checking the weights after each.
void follow(const std::string& fixture, Optimizer& optimizer) {
    SCOPED_TRACE(fixture);
    const TorchFixture f(fixture);
    FixtureParams p(f);
    for (int t = 1; t <= 3; ++t) {
        const std::string step = std::to_string(t);
        p.weight.grad.copy_from(f["grad_w." + step]);
        p.bias.grad.copy_from(f["grad_b." + step]);
        optimizer.step(p.both(), kLrs[t - 1]);
        expect_close(p.weight.value, f["w." + step], "weight after step " + step);
        expect_close(p.bias.value, f["b." + step], "bias after step " + step);
    }
    // The weight's state against PyTorch's, every buffer the fixture has (SGD's momentum is
    // PyTorch's momentum_buffer); each must be there.
    int compared = 0;
    for (auto& [name, tensor] : optimizer.state()) {
        if (name.find(".fc.weight") == std::string::npos) continue;
        const std::string slot =
            name.substr(0, name.find('.'));  // "exp_avg" of "exp_avg.fc.weight"
        const std::string key = (slot == "momentum" ? "momentum_buffer" : slot) + ".w";
        if (!f.has(key)) continue;  // "step": PyTorch's is not in the fixture
        expect_close(tensor, f[key], name);
        ++compared;
    }
    const int want =
        int(f.has("exp_avg.w")) + int(f.has("exp_avg_sq.w")) + int(f.has("momentum_buffer.w"));
    EXPECT_EQ(compared, want) << "optimizer state compared with the fixture's";
    EXPECT_GT(want, 0);
}

AdamOptions adam(float weight_decay = 0, bool decoupled = false) {
    AdamOptions o;
    o.weight_decay = weight_decay, o.decoupled = decoupled;
    return o;
}

TEST(Adam, MatchesPyTorch) {
    Adam plain(adam());
    follow("adam", plain);
    Adam decay(adam(0.1f));
    follow("adam_decay", decay);
    AdamOptions betas = adam();
    betas.beta1 = 0.8f, betas.beta2 = 0.99f, betas.eps = 1e-6f;
    Adam with_betas(betas);
    follow("adam_betas", with_betas);
}

TEST(Adam, AdamWMatchesPyTorch) {
    Adam defaults(adam(0.01f, true));  // AdamW's default weight decay, PyTorch's and ours
    follow("adamw", defaults);
    Adam decay(adam(0.2f, true));
    follow("adamw_decay", decay);
}

TEST(Adam, SgdNesterovMatchesPyTorch) {
    Sgd sgd(SgdOptions{.lr = 0.01f, .momentum = 0.9f, .weight_decay = 0.05f, .nesterov = true});
    follow("sgd_nesterov", sgd);
}

TEST(Adam, ClipFactorMatchesPyTorch) {
    const TorchFixture f("clip_grad_norm");
    double squares = 0;
    for (const char* g : {"grad_a", "grad_b"})
        for (float v : f[g].to_vector()) squares += double(v) * double(v);
    const double norm = std::sqrt(squares);
    EXPECT_NEAR(norm, f["norm"].to_vector()[0], 1e-5);
    const double factor = clip_factor(norm, 0.5f);
    ASSERT_LT(factor, 1.0);
    for (const char* name : {"a", "b"}) {
        Tensor g = f[std::string("grad_") + name].clone();
        tensor_ops(test_device()).scale(g, static_cast<float>(factor));
        expect_close(g, f[std::string("clipped_") + name], name);
    }
    EXPECT_EQ(clip_factor(0.25, 0.5f), 1.0);  // under the limit: left alone
}

// State round trip: three steps straight equal one step, state() -> load_state() into a new
// optimizer, two more steps.
TEST(Adam, StateRoundTripContinuesExactly) {
    const TorchFixture f("adamw_decay");
    FixtureParams straight(f), resumed(f);
    Adam a(adam(0.2f, true)), first(adam(0.2f, true)), second(adam(0.2f, true));
    auto step = [&](Optimizer& o, FixtureParams& p, int t) {
        p.weight.grad.copy_from(f["grad_w." + std::to_string(t)]);
        p.bias.grad.copy_from(f["grad_b." + std::to_string(t)]);
        o.step(p.both(), kLrs[t - 1]);
    };
    for (int t = 1; t <= 3; ++t) step(a, straight, t);
    step(first, resumed, 1);
    const auto state = first.state();
    ASSERT_EQ(state.size(), 6u);  // exp_avg, exp_avg_sq, step for two parameters
    second.load_state(state, resumed.both());
    for (int t = 2; t <= 3; ++t) step(second, resumed, t);
    EXPECT_EQ(straight.weight.value.to_vector(), resumed.weight.value.to_vector());
    EXPECT_EQ(straight.bias.value.to_vector(), resumed.bias.value.to_vector());
}

TEST(Adam, RefusesBadOptionsAndForeignState) {
    auto refuses = [](AdamOptions o, const std::string& words) {
        try {
            Adam a(o);
            ADD_FAILURE() << "accepted options that should name: " << words;
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
        }
    };
    AdamOptions o = adam();
    o.beta1 = 1.f;
    refuses(o, "Adam: invalid beta1 1");
    o = adam(0.f, true);
    o.beta2 = -0.1f;
    refuses(o, "AdamW: invalid beta2");
    o = adam();
    o.eps = 0;
    refuses(o, "invalid eps 0");
    o = adam(-1.f);
    refuses(o, "invalid weight_decay -1");

    // A momentum-SGD state is not Adam's.
    const TorchFixture f("adam");
    FixtureParams p(f);
    Sgd sgd(SgdOptions{.lr = 0.1f, .momentum = 0.9f});
    p.weight.grad.copy_from(f["grad_w.1"]);
    p.bias.grad.copy_from(f["grad_b.1"]);
    sgd.step(p.both(), 0.1f);
    Adam a(adam());
    try {
        a.load_state(sgd.state(), p.both());
        FAIL() << "Adam took SGD's momentum";
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("Adam state: entry 'momentum.fc.bias' is not Adam's "
                                             "(Adam keeps exp_avg, exp_avg_sq, step)"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_TRUE(a.state().empty());
}

}  // namespace
}  // namespace tandem::test

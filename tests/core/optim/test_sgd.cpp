// SGD against values worked out by hand from PyTorch's torch.optim.SGD definition:
//   g = grad + wd * w;  buf = g (first step) or momentum * buf + (1 - dampening) * g;
//   d = nesterov ? g + momentum * buf : buf;  w -= lr * d.
// Every case starts from w = [1, -2, 0.5] with the same gradient g = [0.1, 0.2, -0.3] each step.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "io/safetensors.h"
#include "optim/sgd.h"
#include "support/grad_check.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

const std::vector<float> kW0 = {1.0f, -2.0f, 0.5f};
const std::vector<float> kGrad = {0.1f, 0.2f, -0.3f};

// A parameter set owning its storage: "fc.weight" (decayed) and "fc.bias" (not decayed).
struct Params {
    Parameter weight{"weight", Tensor::from_vector({3}, test_device(), kW0),
                     Tensor::from_vector({3}, test_device(), kGrad), true};
    Parameter bias{"bias", Tensor::from_vector({3}, test_device(), kW0),
                   Tensor::from_vector({3}, test_device(), kGrad), false};
    std::vector<NamedParameter> both() { return {{"fc.weight", &weight}, {"fc.bias", &bias}}; }
    std::vector<NamedParameter> weight_only() { return {{"fc.weight", &weight}}; }
};

void expect_values(const Tensor& t, const std::vector<float>& want, const char* what, int step) {
    const auto got = t.to_vector();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-6f) << what << " after step " << step << ", element " << i;
}

void run_case(const SgdOptions& options, const std::vector<std::vector<float>>& expected) {
    Params p;
    Sgd sgd(options);
    for (std::size_t s = 0; s < expected.size(); ++s) {
        sgd.step(p.weight_only(), options.lr);
        expect_values(p.weight.value, expected[s], "weight", int(s + 1));
    }
}

TEST(Sgd, Plain) {
    run_case({.lr = 0.1f}, {{0.99f, -2.02f, 0.53f}, {0.98f, -2.04f, 0.56f}});
}

TEST(Sgd, Momentum) {
    // buf: g, 1.9 g, 2.71 g.
    run_case({.lr = 0.1f, .momentum = 0.9f},
             {{0.99f, -2.02f, 0.53f}, {0.971f, -2.058f, 0.587f}, {0.9439f, -2.1122f, 0.6683f}});
}

TEST(Sgd, MomentumWithDampening) {
    // buf: g (no dampening on the first step), then 0.9 g + 0.5 g = 1.4 g.
    run_case({.lr = 0.1f, .momentum = 0.9f, .dampening = 0.5f},
             {{0.99f, -2.02f, 0.53f}, {0.976f, -2.048f, 0.572f}});
}

TEST(Sgd, Nesterov) {
    // d: g + 0.9 g = 1.9 g, then g + 0.9 * 1.9 g = 2.71 g.
    run_case({.lr = 0.1f, .momentum = 0.9f, .nesterov = true},
             {{0.981f, -2.038f, 0.557f}, {0.9539f, -2.0922f, 0.6383f}});
}

TEST(Sgd, WeightDecay) {
    // g' = g + 0.1 w: [0.2, 0, -0.25], then [0.198, 0, -0.2475].
    run_case({.lr = 0.1f, .weight_decay = 0.1f},
             {{0.98f, -2.0f, 0.525f}, {0.9602f, -2.0f, 0.54975f}});
}

TEST(Sgd, WeightDecayWithMomentum) {
    // g'1 = [0.2, 0, -0.25] = buf1, w1 = [0.98, -2, 0.525];
    // g'2 = [0.198, 0, -0.2475], buf2 = 0.9 buf1 + g'2 = [0.378, 0, -0.4725],
    // w2 = w1 - 0.1 buf2 = [0.9422, -2, 0.57225].
    run_case({.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.1f},
             {{0.98f, -2.0f, 0.525f}, {0.9422f, -2.0f, 0.57225f}});
}

TEST(Sgd, NoDecayParametersSkipWeightDecay) {
    Params p;
    Sgd sgd({.lr = 0.1f, .weight_decay = 0.1f});
    sgd.step(p.both(), 0.1f);
    expect_values(p.weight.value, {0.98f, -2.0f, 0.525f}, "decayed weight", 1);
    expect_values(p.bias.value, {0.99f, -2.02f, 0.53f}, "bias (decay = false)", 1);
}

TEST(Sgd, StepUsesTheGivenRate) {
    Params p;
    Sgd sgd({.lr = 123.f});
    sgd.step(p.weight_only(), 0.1f);
    expect_values(p.weight.value, {0.99f, -2.02f, 0.53f}, "weight", 1);
    EXPECT_THROW(sgd.step(p.weight_only(), -1.f), ConfigError);
}

TEST(Sgd, ZeroGradClearsGradients) {
    Params p;
    Sgd::zero_grad(p.both());
    EXPECT_EQ(p.weight.grad.to_vector(), std::vector<float>(3, 0.f));
    EXPECT_EQ(p.bias.grad.to_vector(), std::vector<float>(3, 0.f));
}

TEST(Sgd, SkipsParametersWithoutGradient) {
    Parameter buffer{"running_mean", Tensor::from_vector({3}, test_device(), kW0), Tensor(), false};
    Sgd sgd({.lr = 0.1f, .momentum = 0.9f});
    sgd.step({{"bn.running_mean", &buffer}}, 0.1f);
    EXPECT_EQ(buffer.value.to_vector(), kW0);
    EXPECT_TRUE(sgd.state().empty());
}

TEST(Sgd, RejectsBadOptions) {
    EXPECT_THROW(Sgd({.lr = -0.1f}), ConfigError);
    EXPECT_THROW(Sgd({.lr = 0.1f, .momentum = -0.5f}), ConfigError);
    EXPECT_THROW(Sgd({.lr = 0.1f, .weight_decay = -1e-4f}), ConfigError);
    EXPECT_THROW(Sgd({.lr = 0.1f, .dampening = 1.5f}), ConfigError);
    EXPECT_THROW(Sgd({.lr = 0.1f, .nesterov = true}), ConfigError);
    EXPECT_THROW(Sgd({.lr = 0.1f, .momentum = 0.9f, .dampening = 0.1f, .nesterov = true}),
                 ConfigError);
    EXPECT_NO_THROW(Sgd({.lr = 0.1f, .momentum = 0.9f, .nesterov = true}));
}

// Two steps, a checkpoint of the state, then a third step from the restored state must equal
// the third step of the uninterrupted run, bit for bit.
TEST(Sgd, StateRoundTripResumesExactly) {
    const SgdOptions options{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = true};
    Params a;
    Sgd sgd_a(options);
    sgd_a.step(a.both(), 0.1f);
    sgd_a.step(a.both(), 0.05f);

    const auto state = sgd_a.state();
    ASSERT_EQ(state.size(), 2u);
    EXPECT_EQ(state[0].first, "momentum.fc.bias");
    EXPECT_EQ(state[1].first, "momentum.fc.weight");

    TempDir dir;
    NamedTensors file_tensors(state.begin(), state.end());
    save_safetensors(dir.file("optim.safetensors"), file_tensors);
    const auto loaded = load_safetensors(dir.file("optim.safetensors"), test_device());

    Params b;
    b.weight.value.copy_from(a.weight.value);
    b.bias.value.copy_from(a.bias.value);
    Sgd sgd_b(options);
    sgd_b.load_state(loaded.tensors, b.both());

    // Without the state (a fresh optimizer: buf = g) the third step goes elsewhere.
    Params fresh;
    fresh.weight.value.copy_from(a.weight.value);
    fresh.bias.value.copy_from(a.bias.value);
    Sgd sgd_fresh(options);

    sgd_a.step(a.both(), 0.02f);
    sgd_b.step(b.both(), 0.02f);
    sgd_fresh.step(fresh.both(), 0.02f);
    EXPECT_EQ(a.weight.value.to_vector(), b.weight.value.to_vector());
    EXPECT_EQ(a.bias.value.to_vector(), b.bias.value.to_vector());
    EXPECT_NE(a.weight.value.to_vector(), fresh.weight.value.to_vector());
}

// Stages step their own slices of the net from their own workers at the same time.
TEST(Sgd, ConcurrentStepsOnDisjointParametersMatchSequentialSteps) {
    constexpr int kParams = 16;
    auto make = [] {
        std::vector<std::unique_ptr<Parameter>> ps;
        for (int i = 0; i < kParams; ++i) {
            std::vector<float> w(64), g(64);
            for (int j = 0; j < 64; ++j) w[j] = float(i - j) * 0.01f, g[j] = float(i + j) * 0.001f;
            ps.push_back(std::make_unique<Parameter>(
                Parameter{"w", Tensor::from_vector({64}, test_device(), w),
                          Tensor::from_vector({64}, test_device(), g), true}));
        }
        return ps;
    };
    auto slice = [](std::vector<std::unique_ptr<Parameter>>& ps, int part) {
        std::vector<NamedParameter> out;
        for (int i = part; i < kParams; i += 2)
            out.push_back({"layer" + std::to_string(i) + ".weight", ps[std::size_t(i)].get()});
        return out;
    };
    const SgdOptions options{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-3f};
    auto sequential = make();
    Sgd a(options);
    for (int step = 0; step < 3; ++step) {
        a.step(slice(sequential, 0), 0.1f);
        a.step(slice(sequential, 1), 0.1f);
    }
    auto concurrent = make();
    Sgd b(options);
    for (int step = 0; step < 3; ++step) {
        std::thread other([&] { b.step(slice(concurrent, 1), 0.1f); });
        b.step(slice(concurrent, 0), 0.1f);
        other.join();
    }
    for (int i = 0; i < kParams; ++i)
        EXPECT_EQ(sequential[std::size_t(i)]->value.to_vector(),
                  concurrent[std::size_t(i)]->value.to_vector())
            << "parameter " << i;
    EXPECT_EQ(b.state().size(), std::size_t(kParams));
}

TEST(Sgd, LoadStateRejectsMissingMisshapedAndUnknownEntries) {
    Params p;
    Sgd sgd({.lr = 0.1f, .momentum = 0.9f});
    const Tensor good = Tensor::zeros({3}, test_device());
    const Tensor wrong = Tensor::zeros({4}, test_device());
    try {
        sgd.load_state({{"momentum.fc.weight", good}}, p.both());
        FAIL() << "a missing entry was accepted";
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("momentum.fc.bias"), std::string::npos) << e.what();
    }
    try {
        sgd.load_state({{"momentum.fc.weight", good}, {"momentum.fc.bias", wrong}}, p.both());
        FAIL() << "a misshaped entry was accepted";
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("momentum.fc.bias"), std::string::npos) << e.what();
    }
    EXPECT_THROW(sgd.load_state({{"momentum.fc.weight", good},
                                 {"momentum.fc.bias", good},
                                 {"momentum.conv.weight", good}},
                                p.both()),
                 DataError);
    EXPECT_NO_THROW(
        sgd.load_state({{"momentum.fc.weight", good}, {"momentum.fc.bias", good}}, p.both()));
    EXPECT_EQ(sgd.state().size(), 2u);
    // An empty state is a checkpoint taken before the first step: no buffers.
    sgd.load_state({}, p.both());
    EXPECT_TRUE(sgd.state().empty());
}

}  // namespace
}  // namespace tandem::test

// The element-wise activations (issue 18): finite-difference gradients, oneDNN against the
// reference loops, and both against PyTorch's values on fixed inputs (tests/torch/
// cases_activations.py), for every algorithm, in both layouts and at rank 2.
#include <gtest/gtest.h>

#include <cmath>

#include "layers/activation.h"
#include "layers/sequential.h"
#include "support/grad_check.h"
#include "support/torch_fixture.h"

namespace tandem::test {
namespace {

using A = ActivationAlgorithm;
constexpr A kAll[] = {A::relu, A::leaky_relu, A::sigmoid, A::tanh, A::gelu_erf, A::gelu_tanh};

// The slope the LeakyReLU cases use (PyTorch's fixture too).
float alpha_for(A a) {
    return a == A::leaky_relu ? 0.2f : 0.f;
}

// The fixture of each algorithm, as cases_activations.py names it.
std::string fixture_of(A a) {
    switch (a) {
        case A::relu: return "activation_relu";
        case A::leaky_relu: return "activation_leaky_relu";
        case A::sigmoid: return "activation_sigmoid";
        case A::tanh: return "activation_tanh";
        case A::gelu_erf: return "activation_gelu";
        case A::gelu_tanh: return "activation_gelu_tanh";
    }
    return {};
}

// The shapes and layouts every case runs in: 4-D both ways, and 2-D as after a Linear.
struct Form {
    Shape shape;
    Layout layout;
    std::string text;
};
const Form kForms[] = {{{2, 3, 4, 5}, Layout::contiguous, "2x3x4x5 contiguous"},
                       {{2, 3, 4, 5}, Layout::channels_last, "2x3x4x5 channels_last"},
                       {{6, 20}, Layout::contiguous, "6x20"}};

// `t`'s values (logical order) in `form`.
Tensor in_form(const Tensor& t, const Form& form) {
    return Tensor::from_vector(form.shape, test_device(), t.to_vector(), form.layout);
}

// Inputs away from ReLU's kink at 0: |x| in [0.1, 2], signs alternating.
Tensor away_from_zero(const Form& form) {
    auto v = random_tensor(form.shape, test_device(), 5, 0.1f, 2.f).to_vector();
    for (std::size_t i = 0; i < v.size(); i += 2) v[i] = -v[i];
    return Tensor::from_vector(form.shape, test_device(), v, form.layout);
}

struct Result {
    Tensor y, dx;
};

// Forward in training and backward on a fresh tape, with the `impl` kernel.
Result run(A a, const std::string& impl, const Tensor& x, const Tensor& dy) {
    Activation layer(a, alpha_for(a));
    layer.set_kernel_impl(impl);
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    Result r;
    r.y = layer.forward(x, pass);
    r.dx = layer.backward(x, dy, pass);
    return r;
}

TEST(Activation, GradientsMatchFiniteDifferences) {
    for (A a : kAll)
        for (const Form& form : kForms) {
            SCOPED_TRACE(std::string(activation_name(a)) + " " + form.text);
            Activation layer(a, alpha_for(a));
            layer.set_name("act1");
            GradCheckOptions o;
            o.layout = form.layout;
            check_gradients(layer, away_from_zero(form), test_device(), o);
        }
}

// Both tails too: inputs in [-6, 6) and the GELU tanh form, whose formulas differ most there.
TEST(Activation, DnnlMatchesReference) {
    for (A a : kAll)
        for (const Form& form : kForms) {
            SCOPED_TRACE(std::string(activation_name(a)) + " " + form.text);
            const Tensor x = random_tensor(form.shape, test_device(), 9, -6.f, 6.f, form.layout);
            const Tensor dy = random_tensor(form.shape, test_device(), 10, -1.f, 1.f, form.layout);
            const Result fast = run(a, "dnnl", x, dy), ref = run(a, "reference", x, dy);
            EXPECT_EQ(fast.y.layout(), form.layout);
            const auto fy = fast.y.to_vector(), ry = ref.y.to_vector();
            const auto fdx = fast.dx.to_vector(), rdx = ref.dx.to_vector();
            for (std::size_t i = 0; i < fy.size(); ++i) {
                ASSERT_NEAR(fy[i], ry[i], 1e-5f * (1 + std::fabs(ry[i]))) << "y at " << i;
                ASSERT_NEAR(fdx[i], rdx[i], 1e-5f * (1 + std::fabs(rdx[i]))) << "dx at " << i;
            }
        }
}

TEST(Activation, MatchesPyTorch) {
    for (A a : kAll) {
        const TorchFixture f(fixture_of(a));
        for (const char* impl : {"dnnl", "reference"})
            for (const Form& form : kForms) {
                SCOPED_TRACE(std::string(activation_name(a)) + " " + impl + " " + form.text);
                const Result r = run(a, impl, in_form(f["x"], form), in_form(f["dy"], form));
                expect_close(in_form(r.y, kForms[0]), f["y"], f.name() + " y");
                expect_close(in_form(r.dx, kForms[0]), f["dx"], f.name() + " dx");
            }
    }
}

TEST(Activation, KindOptionsAndClone) {
    EXPECT_EQ(Activation(A::sigmoid).kind(), "Sigmoid");
    EXPECT_EQ(Activation(A::tanh).kind(), "Tanh");
    EXPECT_EQ(Activation(A::relu).kind(), "ReLU");
    EXPECT_EQ(Activation(A::gelu_erf).options_text(), "approximate = 'none'");
    EXPECT_EQ(Activation(A::gelu_tanh).options_text(), "approximate = 'tanh'");
    EXPECT_EQ(Activation(A::sigmoid).options_text(), "");
    Activation leaky(A::leaky_relu, 0.25f);
    leaky.set_name("leaky");
    leaky.set_kernel_impl("reference");
    EXPECT_EQ(leaky.kind(), "LeakyReLU");
    EXPECT_EQ(leaky.options_text(), "negative_slope = 0.25");
    const auto copy = std::dynamic_pointer_cast<Activation>(leaky.clone());
    ASSERT_TRUE(copy);
    EXPECT_EQ(copy->algorithm(), A::leaky_relu);
    EXPECT_EQ(copy->alpha(), 0.25f);
    EXPECT_EQ(copy->name(), "leaky");
    // Unnamed layers are named by kind in a Sequential.
    Sequential net({std::make_shared<Activation>(A::gelu_tanh),
                    std::make_shared<Activation>(A::tanh),
                    std::make_shared<Activation>(A::gelu_erf)});
    EXPECT_EQ(net.at(0).name(), "gelu1");
    EXPECT_EQ(net.at(1).name(), "tanh1");
    EXPECT_EQ(net.at(2).name(), "gelu2");
}

// What the partitioner and the cost models weigh: an element-wise layer's output, as ReLU.
TEST(Activation, MemoryEstimateIsItsOutput) {
    for (A a : kAll) {
        const MemoryEstimate e = Activation(a, alpha_for(a)).memory_estimate({8, 3, 4, 4});
        EXPECT_EQ(e.output_bytes, 8u * 3 * 4 * 4 * sizeof(float)) << activation_name(a);
        EXPECT_EQ(e.parameter_bytes, 0u);
    }
}

TEST(Activation, RefusesANonFiniteSlope) {
    try {
        Activation(A::leaky_relu, std::nanf(""));
        ADD_FAILURE() << "a NaN slope was taken";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("LeakyReLU: negative_slope must be a finite number"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(Activation(A::sigmoid, 0.5f), ConfigError);
}

}  // namespace
}  // namespace tandem::test

#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.h"
#include "layers/activation.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/graph.h"
#include "layers/linear.h"
#include "layers/merge.h"
#include "layers/narrow.h"
#include "layers/relu.h"
#include "layers/reshape.h"
#include "layers/residual.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

LayerPtr named(LayerPtr layer, const std::string& name) {
    layer->set_name(name);
    return layer;
}

LayerPtr conv(std::int64_t in, std::int64_t out, std::int64_t k, const std::string& name = {}) {
    Conv2dOptions o;
    o.in_channels = in;
    o.out_channels = out;
    o.kernel_h = o.kernel_w = k;
    o.pad_h = o.pad_w = k / 2;
    return named(std::make_shared<Conv2d>(o), name);
}

LayerPtr linear(std::int64_t in, std::int64_t out, const std::string& name = {}) {
    LinearOptions o;
    o.in_features = in;
    o.out_features = out;
    return named(std::make_shared<Linear>(o), name);
}

// An Inception-style block: a 1x1, a 3x3 and a 1x1 -> 3x3 branch joined along channels.
std::shared_ptr<Graph> inception(std::int64_t in) {
    auto g = std::make_shared<Graph>();
    g->set_name("inception");
    g->add_input("x");
    const auto b1 = g->add(conv(in, 2, 1, "b1"), {"x"});
    const auto b2 = g->add(conv(in, 3, 3, "b2"), {"x"});
    const auto b3a = g->add(conv(in, 2, 1, "b3a"), {"x"});
    const auto b3 = g->add(conv(2, 2, 3, "b3"), {b3a});
    const auto cat = g->add(std::make_shared<Concat>(1), {b1, b2, b3});
    g->set_outputs({cat});
    g->initialize(5);
    return g;
}

Tape& fresh_tape() {
    static thread_local Tape tape;
    tape.clear();
    return tape;
}

TEST(Graph, InceptionBlockShapesNamesAndGradients) {
    auto g = inception(3);
    EXPECT_EQ(g->output_shape({2, 3, 5, 5}), (Shape{2, 7, 5, 5}));
    std::vector<std::string> names;
    for (auto& p : named_parameters(*g)) names.push_back(p.name);
    EXPECT_EQ(names, (std::vector<std::string>{"b1.weight", "b1.bias", "b2.weight", "b2.bias",
                                               "b3a.weight", "b3a.bias", "b3.weight", "b3.bias"}));
    EXPECT_EQ(g->node(4).name(), "concat1");
    EXPECT_EQ(g->options_text(), "1 input, 5 nodes, 1 output");
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        GradCheckOptions o;
        o.layout = layout;
        o.max_elements = 60;
        check_gradients(*g, random_tensor({2, 3, 4, 4}, test_device(), 3, -1, 1, layout),
                        test_device(), o);
    }
}

TEST(Graph, ConcatPutsEachBranchInItsChannels) {
    auto g = inception(3);
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        Tensor x = random_tensor({2, 3, 4, 4}, test_device(), 9, -1, 1, layout);
        Pass pass{test_device(), Mode::eval, 0, fresh_tape(), 0};
        const Tensor y = g->forward(x, pass);
        EXPECT_EQ(y.layout(), layout);
        const auto yv = y.to_vector();
        const auto b1 = g->node(0).forward(x, pass).to_vector();
        const auto b2 = g->node(1).forward(x, pass).to_vector();
        const auto b3 = g->node(3).forward(g->node(2).forward(x, pass), pass).to_vector();
        // Logical NCHW order: sample n, channel c, 16 pixels.
        for (int n = 0; n < 2; ++n)
            for (int c = 0; c < 7; ++c)
                for (int p = 0; p < 16; ++p) {
                    const float got = yv[static_cast<std::size_t>((n * 7 + c) * 16 + p)];
                    float want = 0;
                    if (c < 2)
                        want = b1[static_cast<std::size_t>((n * 2 + c) * 16 + p)];
                    else if (c < 5)
                        want = b2[static_cast<std::size_t>((n * 3 + c - 2) * 16 + p)];
                    else
                        want = b3[static_cast<std::size_t>((n * 2 + c - 5) * 16 + p)];
                    ASSERT_FLOAT_EQ(got, want) << "n " << n << " c " << c << " p " << p;
                }
    }
}

// x -> fc1 -> (tanh, sigmoid) -> mul -> add(with fc1) -> narrow -> reshape -> flatten: fan-out,
// gradients summed from several readers, every merge and slice.
std::shared_ptr<Graph> gated() {
    auto g = std::make_shared<Graph>();
    g->add_input("x");
    const auto h = g->add(linear(6, 8, "fc1"), {"x"});
    const auto t = g->add(std::make_shared<Activation>(ActivationAlgorithm::tanh), {h});
    const auto s = g->add(std::make_shared<Activation>(ActivationAlgorithm::sigmoid), {h});
    const auto m = g->add(std::make_shared<Mul>(), {t, s});
    const auto a = g->add(std::make_shared<Add>(), {m, h, h});
    const auto n = g->add(std::make_shared<Narrow>(1, 2, 4), {a});
    const auto r = g->add(std::make_shared<Reshape>(std::vector<std::int64_t>{2, -1}), {n});
    const auto f = g->add(std::make_shared<Flatten>(), {r});
    g->set_outputs({f});
    g->initialize(8);
    return g;
}

TEST(Graph, FanOutMergesAndSlicesGradients) {
    auto g = gated();
    EXPECT_EQ(g->output_shape({3, 6}), (Shape{3, 4}));
    GradCheckOptions o;
    check_gradients(*g, random_tensor({3, 6}, test_device(), 4), test_device(), o);
}

TEST(Graph, SlicesAndMergesAloneMatchFiniteDifferences) {
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        GradCheckOptions o;
        o.layout = layout;
        Narrow channels(1, 1, 2), rows(2, 1, 2), columns(3, 0, 1);
        for (Layer* layer : std::vector<Layer*>{&channels, &rows, &columns})
            check_gradients(*layer, random_tensor({2, 4, 3, 3}, test_device(), 6, -1, 1, layout),
                            test_device(), o);
        Reshape reshape({-1, 3});
        check_gradients(reshape, random_tensor({2, 4, 3, 3}, test_device(), 7, -1, 1, layout),
                        test_device(), o);
    }
}

TEST(Graph, ChainEqualsSequentialAndResidualEqualsAdd) {
    auto seq_body = std::make_shared<Sequential>(
        std::vector<LayerPtr>{conv(2, 2, 3, "c1"), std::make_shared<ReLU>()});
    Residual residual(seq_body, nullptr);
    residual.initialize(3);
    auto g = std::make_shared<Graph>();
    g->add_input("x");
    auto body = seq_body->clone();
    body->set_name("body");
    const auto b = g->add(body, {"x"});
    g->set_outputs({g->add(std::make_shared<Add>(), {b, "x"})});
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        Tensor x = random_tensor({2, 2, 3, 3}, test_device(), 1, -1, 1, layout);
        Tape t1, t2;
        Pass p1{test_device(), Mode::train, 0, t1, 0}, p2{test_device(), Mode::train, 0, t2, 0};
        EXPECT_EQ(residual.forward(x, p1).to_vector(), g->forward(x, p2).to_vector());
        Tensor dy = random_tensor({2, 2, 3, 3}, test_device(), 2, -1, 1, layout);
        EXPECT_EQ(residual.backward(x, dy, p1).to_vector(), g->backward(x, dy, p2).to_vector());
        EXPECT_FALSE(t2.contains(g.get()));  // backward releases what forward kept
    }
}

TEST(Graph, SeveralInputsAndOutputs) {
    // out1 = concat(fc_a(a), fc_b(b)), out2 = fc_a(a): an output that also feeds another node.
    auto g = std::make_shared<Graph>();
    g->add_input("a");
    g->add_input("b");
    const auto fa = g->add(linear(3, 2, "fa"), {"a"});
    const auto fb = g->add(linear(4, 2, "fb"), {"b"});
    const auto cat = g->add(std::make_shared<Concat>(1), {fa, fb});
    g->set_outputs({cat, fa});
    g->initialize(2);
    EXPECT_EQ(g->output_names(), (std::vector<std::string>{"concat1", "fa"}));
    EXPECT_THROW(g->output_shape({2, 3}), ConfigError);  // not one in, one out

    Tensor a = random_tensor({2, 3}, test_device(), 1), b = random_tensor({2, 4}, test_device(), 2);
    Tensor r1 = random_tensor({2, 4}, test_device(), 3),
           r2 = random_tensor({2, 2}, test_device(), 4);
    auto loss = [&](const Tensor& av, const Tensor& bv) {
        Tape tape;
        Pass pass{test_device(), Mode::eval, 0, tape, 0};
        const auto ys = g->forward_graph({av, bv}, pass);
        double total = 0;
        const auto y1 = ys[0].to_vector(), y2 = ys[1].to_vector(), w1 = r1.to_vector(),
                   w2 = r2.to_vector();
        for (std::size_t i = 0; i < y1.size(); ++i) total += double(y1[i]) * w1[i];
        for (std::size_t i = 0; i < y2.size(); ++i) total += double(y2[i]) * w2[i];
        return total;
    };
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    g->forward_graph({a, b}, pass);
    const auto dxs = g->backward_graph({r1, r2}, pass);
    ASSERT_EQ(dxs.size(), 2u);
    const std::vector<Tensor> xs{a, b};
    for (std::size_t k = 0; k < 2; ++k) {
        const auto analytic = dxs[k].to_vector();
        auto values = xs[k].to_vector();
        for (std::size_t i = 0; i < values.size(); ++i) {
            const float keep = values[i];
            auto with = [&](float v) {
                values[i] = v;
                Tensor t = Tensor::from_vector(xs[k].shape(), test_device(), values);
                return k == 0 ? loss(t, b) : loss(a, t);
            };
            const double numeric = (with(keep + 1e-2f) - with(keep - 1e-2f)) / 2e-2;
            values[i] = keep;
            EXPECT_NEAR(analytic[i], numeric, 1e-2 * std::max(1.0, std::abs(numeric)))
                << "input " << k << " #" << i;
        }
    }
    // An undefined gradient: nothing flows from that output (fb gets nothing from out2 alone).
    g->forward_graph({a, b}, pass);
    for (auto* p : g->node(1).parameters()) p->grad.fill(0);
    const auto only_second = g->backward_graph({Tensor(), r2}, pass);
    EXPECT_FALSE(only_second[1].defined());
    for (auto* p : g->node(1).parameters())
        EXPECT_EQ(tensor_ops(test_device()).sum_squares(p->grad), 0.0);
}

TEST(Graph, MicroBatchesTogetherEqualOneAtATime) {
    auto g = gated();
    Tensor x1 = random_tensor({2, 6}, test_device(), 1),
           x2 = random_tensor({3, 6}, test_device(), 2);
    Tape ta, tb, t1, t2;
    Pass a{test_device(), Mode::train, 0, ta, 0}, b{test_device(), Mode::train, 1, tb, 0};
    Pass p1{test_device(), Mode::train, 0, t1, 0}, p2{test_device(), Mode::train, 1, t2, 0};
    const auto together = g->forward_many({x1, x2}, {&a, &b});
    EXPECT_EQ(together[0].to_vector(), g->forward(x1, p1).to_vector());
    EXPECT_EQ(together[1].to_vector(), g->forward(x2, p2).to_vector());
    Tensor d1 = random_tensor({2, 4}, test_device(), 3),
           d2 = random_tensor({3, 4}, test_device(), 4);
    const auto dxs = g->backward_many({x1, x2}, {d1, d2}, {&a, &b});
    EXPECT_EQ(dxs[0].to_vector(), g->backward(x1, d1, p1).to_vector());
    EXPECT_EQ(dxs[1].to_vector(), g->backward(x2, d2, p2).to_vector());
}

TEST(Graph, CloneHasItsOwnWeightsAndTheSameOutputs) {
    auto g = inception(3);
    auto copy = std::static_pointer_cast<Graph>(g->clone());
    EXPECT_EQ(copy->name(), "inception");
    EXPECT_EQ(copy->node_input_names(3), (std::vector<std::string>{"b3a"}));
    Tensor x = random_tensor({1, 3, 4, 4}, test_device(), 3);
    Pass pass{test_device(), Mode::eval, 0, fresh_tape(), 0};
    EXPECT_EQ(g->forward(x, pass).to_vector(), copy->forward(x, pass).to_vector());
    EXPECT_NE(named_parameters(*g)[0].parameter->value.raw(),
              named_parameters(*copy)[0].parameter->value.raw());
}

TEST(Graph, BuildSortsNodesAndNamesACycle) {
    auto g = Graph::build({"x"},
                          {{std::make_shared<Add>(), {"f1", "f2"}},
                           {linear(2, 2, "f2"), {"f1"}},
                           {linear(2, 2, "f1"), {"x"}}},
                          {"add1"});
    EXPECT_EQ(g->node(0).name(), "f1");
    EXPECT_EQ(g->node(2).name(), "add1");
    try {
        Graph::build(
            {"x"},
            {{linear(2, 2, "a"), {"c"}}, {linear(2, 2, "b"), {"a"}}, {linear(2, 2, "c"), {"b"}}},
            {"c"});
        FAIL() << "expected a cycle";
    } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("cycle"), std::string::npos) << what;
        EXPECT_NE(what.find("'a'"), std::string::npos) << what;
        EXPECT_NE(what.find("'c'"), std::string::npos) << what;
    }
}

void expect_graph_error(const std::function<void()>& f, const std::vector<std::string>& words) {
    try {
        f();
        FAIL() << "expected an error with " << words.front();
    } catch (const Error& e) {
        const std::string full = e.full_message();
        for (const auto& w : words) EXPECT_NE(full.find(w), std::string::npos) << full;
    }
}

TEST(Graph, MistakesAreNamed) {
    auto g = std::make_shared<Graph>();
    g->set_name("g");
    g->add_input("x");
    expect_graph_error([&] { g->add(linear(2, 2), {"nope"}); },
                       {"'nope'", "not an input or a node", "'x'"});
    expect_graph_error([&] { g->add(linear(2, 2), {}); }, {"has no inputs"});
    expect_graph_error([&] { g->add(std::make_shared<Concat>(1), {"x"}); },
                       {"at least 2 inputs", "'concat1' (Concat)"});
    expect_graph_error(
        [&] {
            g->add(std::make_shared<Mul>(), {"x", "x", "x"});
        },
        {"2 inputs, got 3"});
    expect_graph_error([&] { g->add(linear(2, 2), {"x", "x"}); }, {"takes one input", "nn.Concat"});
    expect_graph_error([&] { g->add_input("x"); }, {"'x' is taken"});
    expect_graph_error([&] { g->output_shape({1, 2}); }, {"no outputs"});
    const auto a = g->add(linear(2, 2, "a"), {"x"});
    const auto b = g->add(linear(2, 3, "b"), {"x"});
    g->set_outputs({a});
    expect_graph_error([&] { g->output_shape({1, 2}); }, {"'b' (Linear)", "leads to no output"});
    g->set_outputs({g->add(std::make_shared<Add>(), {a, b})});
    expect_graph_error(
        [&] {
            g->output_shape({1, 2});
        },
        {"input 2 is 1x3", "node 'add1' (Add) of 'g' (Graph)"});
    expect_graph_error([&] { g->set_outputs({"a", "a"}); }, {"twice"});
    expect_graph_error([&] { Concat(0); }, {"dimension 1 is the batch"});
    expect_graph_error([&] { Narrow(1, 3, 2).output_shape({1, 4}); }, {"indices 4..5", "size 4"});
    expect_graph_error([&] { Reshape({3, -1}).output_shape({1, 4}); }, {"4 elements", "3x?"});
    expect_graph_error(
        [&] {
            std::make_shared<Add>()->output_shape({1, 2});
        },
        {"joins several inputs", "nn.Graph"});
    expect_graph_error([&] { g->add(g, {"x"}); }, {"contains this graph"});
}

TEST(Graph, ErrorsInsideANodeNameTheNodeAndTheGraph) {
    auto g = std::make_shared<Graph>();
    g->set_name("g");
    g->add_input("x");
    g->set_outputs({g->add(linear(2, 2, "fc"), {"x"})});
    Pass pass{test_device(), Mode::train, 0, fresh_tape(), 0};
    expect_graph_error(
        [&] {
            g->forward(random_tensor({2, 3}, test_device(), 1), pass);
        },
        {"'fc' (Linear)", "of 'g' (Graph)"});
}

TEST(Graph, MemoryAndFlopsAddUpTheNodes) {
    auto g = inception(3);
    const Shape in{2, 3, 4, 4};
    double flops = 0;
    std::size_t params = 0;
    const auto shapes = g->value_shapes({in});
    for (std::size_t i = 0; i < g->node_count(); ++i) {
        if (dynamic_cast<Merge*>(&g->node(i))) continue;
        const Shape& x = shapes[g->node_input_values(i)[0]];
        flops += g->node(i).forward_flops(x);
        params += g->node(i).memory_estimate(x).parameter_bytes;
    }
    EXPECT_GT(flops, 0);
    EXPECT_DOUBLE_EQ(g->forward_flops(in), flops);
    EXPECT_EQ(g->memory_estimate(in).parameter_bytes, params);
    EXPECT_EQ(g->memory_estimate(in).output_bytes, 2u * 7 * 16 * sizeof(float));
    EXPECT_NO_THROW(g->bind(test_device(), in, Layout::channels_last));
}

}  // namespace
}  // namespace tandem::test

#include <gtest/gtest.h>

#include <cmath>

#include "layers/additive_attention.h"
#include "layers/graph.h"
#include "layers/narrow.h"
#include "layers/scaled_dot_product_attention.h"
#include "support/grad_check.h"
#include "support/torch_fixture.h"

namespace tandem::test {
namespace {

ScaledDotProductAttentionOptions scaled(std::optional<float> scale, bool causal) {
    ScaledDotProductAttentionOptions o;
    o.scale = scale;
    o.causal = causal;
    return o;
}

AdditiveAttentionOptions additive(std::int64_t query, std::int64_t key, std::int64_t hidden,
                                  bool bias) {
    AdditiveAttentionOptions o;
    o.query_size = query;
    o.key_size = key;
    o.hidden_size = hidden;
    o.bias = bias;
    return o;
}

// The fixture's inputs: q, k and v when it has one (else the keys are the values).
std::vector<Tensor> inputs_of(const TorchFixture& f) {
    std::vector<Tensor> xs{f["q"], f["k"]};
    if (f.has("v")) xs.push_back(f["v"]);
    return xs;
}

// Forward and backward of `layer` on the fixture's inputs match PyTorch's, and so do the
// weights read back; parameters (if any) are the fixture's.
void expect_matches_fixture(Attention& layer, const TorchFixture& f) {
    for (Parameter* p : layer.parameters()) {
        p->value.copy_from(f[p->name]);
        p->grad.fill(0);
    }
    const std::vector<Tensor> xs = inputs_of(f);
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    expect_close(layer.merge(xs, pass), f["y"], "y", 1e-4f, 1e-5f);
    expect_close(layer.attention_weights(), f["weights"], "weights", 1e-4f, 1e-6f);
    const auto dxs = layer.unmerge(xs, f["dy"], pass);
    ASSERT_EQ(dxs.size(), xs.size());
    expect_close(dxs[0], f["dq"], "dq", 1e-4f, 1e-5f);
    expect_close(dxs[1], f["dk"], "dk", 1e-4f, 1e-5f);
    if (xs.size() > 2) expect_close(dxs[2], f["dv"], "dv", 1e-4f, 1e-5f);
    for (Parameter* p : layer.parameters())
        expect_close(p->grad, f["grad." + p->name], "grad." + p->name, 1e-4f, 1e-5f);
    EXPECT_TRUE(tape.empty());
}

TEST(Attention, ScaledDotProductMatchesPyTorch) {
    const std::pair<const char*, ScaledDotProductAttentionOptions> cases[] = {
        {"attention_sdpa_qkv", scaled({}, false)},
        {"attention_sdpa_causal", scaled(0.5f, true)},
        {"attention_sdpa_causal_more_keys", scaled({}, true)},
        {"attention_sdpa_kv", scaled({}, false)},
    };
    for (const auto& [fixture, options] : cases) {
        SCOPED_TRACE(fixture);
        ScaledDotProductAttention layer(options);
        expect_matches_fixture(layer, TorchFixture(fixture));
    }
}

TEST(Attention, AdditiveMatchesPyTorch) {
    {
        SCOPED_TRACE("attention_additive_qkv");
        AdditiveAttention layer(additive(5, 3, 6, true));
        expect_matches_fixture(layer, TorchFixture("attention_additive_qkv"));
    }
    {
        SCOPED_TRACE("attention_additive_kv_nobias");
        AdditiveAttention layer(additive(4, 3, 5, false));
        expect_matches_fixture(layer, TorchFixture("attention_additive_kv_nobias"));
    }
}

// A graph whose one input (N x T x features) is cut into the attention's inputs, so that the
// one-input gradient check reaches each of them: `widths` are q, k (and v) features.
std::shared_ptr<Graph> attention_graph(LayerPtr attention,
                                       const std::vector<std::int64_t>& widths) {
    auto g = std::make_shared<Graph>();
    g->add_input("x");
    std::vector<std::string> parts;
    std::int64_t start = 0;
    for (std::int64_t w : widths) {
        parts.push_back(g->add(std::make_shared<Narrow>(2, start, w), {"x"}));
        start += w;
    }
    g->set_outputs({g->add(std::move(attention), parts)});
    return g;
}

TEST(Attention, GradientsMatchFiniteDifferences) {
    GradCheckOptions o;
    o.max_elements = 60;
    for (bool causal : {false, true}) {
        SCOPED_TRACE(causal ? "causal" : "full");
        auto three = attention_graph(
            std::make_shared<ScaledDotProductAttention>(scaled({}, causal)), {3, 3, 2});
        check_gradients(*three, random_tensor({2, 4, 8}, test_device(), 1), test_device(), o);
        auto two = attention_graph(
            std::make_shared<ScaledDotProductAttention>(scaled(0.7f, causal)), {3, 3});
        check_gradients(*two, random_tensor({2, 4, 6}, test_device(), 2), test_device(), o);
    }
    for (bool bias : {true, false}) {
        SCOPED_TRACE(bias ? "additive, bias" : "additive, no bias");
        auto attention = std::make_shared<AdditiveAttention>(additive(3, 2, 5, bias));
        attention->initialize(4);
        if (bias) attention->parameters()[2]->value.copy_from(random_tensor({5}, test_device(), 5));
        check_gradients(*attention_graph(attention, {3, 2, 2}),
                        random_tensor({2, 4, 7}, test_device(), 6), test_device(), o);
        auto keys_are_values = std::make_shared<AdditiveAttention>(additive(3, 2, 5, bias));
        keys_are_values->initialize(7);
        check_gradients(*attention_graph(keys_are_values, {3, 2}),
                        random_tensor({2, 4, 5}, test_device(), 8), test_device(), o);
    }
}

// Every row of the weights sums to 1; under a causal mask keys after the query weigh 0.
void expect_softmax_rows(const Tensor& weights, bool causal) {
    const auto w = weights.to_vector();
    const std::int64_t n = weights.shape()[0], tq = weights.shape()[1], tk = weights.shape()[2];
    for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t i = 0; i < tq; ++i) {
            double sum = 0;
            for (std::int64_t j = 0; j < tk; ++j) {
                const float a = w[static_cast<std::size_t>((b * tq + i) * tk + j)];
                EXPECT_GE(a, 0.f);
                if (causal && j > i) {
                    EXPECT_EQ(a, 0.f) << "sample " << b << ", query " << i << ", key " << j;
                } else {
                    EXPECT_GT(a, 0.f) << "sample " << b << ", query " << i << ", key " << j;
                }
                sum += a;
            }
            EXPECT_NEAR(sum, 1.0, 1e-5) << "sample " << b << ", query " << i;
        }
}

TEST(Attention, WeightsOfTheLastForwardReadBack) {
    ScaledDotProductAttention causal(scaled({}, true));
    EXPECT_FALSE(causal.attention_weights().defined());
    const Tensor q = random_tensor({3, 5, 4}, test_device(), 1, -2, 2),
                 kv = random_tensor({3, 5, 4}, test_device(), 2);
    Tape tape;
    Pass eval{test_device(), Mode::eval, 0, tape, 0};
    causal.merge({q, kv}, eval);
    EXPECT_EQ(causal.attention_weights().shape(), (Shape{3, 5, 5}));
    expect_softmax_rows(causal.attention_weights(), true);
    EXPECT_TRUE(tape.empty());  // evaluation keeps nothing for backward, only the weights

    AdditiveAttention bahdanau(additive(4, 4, 6, true));
    Pass train{test_device(), Mode::train, 0, tape, 0};
    bahdanau.merge({q, kv}, train);
    const Tensor first = bahdanau.attention_weights();
    expect_softmax_rows(first, false);
    // A second forward (another micro-batch, here of 2 samples) replaces them.
    bahdanau.merge({q.narrow_batch(0, 2), kv.narrow_batch(0, 2)}, train);
    EXPECT_EQ(bahdanau.attention_weights().shape(), (Shape{2, 5, 5}));
    EXPECT_EQ(first.shape(), (Shape{3, 5, 5}));  // what was read stays as it was
}

void expect_error(const std::function<void()>& f, const std::string& words) {
    try {
        f();
        FAIL() << "expected an error containing: " << words;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
}

TEST(Attention, ShapesNamesAndMistakes) {
    ScaledDotProductAttention sdpa(scaled({}, true));
    sdpa.set_name("attn");
    EXPECT_EQ(sdpa.kind(), "ScaledDotProductAttention");
    EXPECT_EQ(sdpa.options_text(), "scale 1/sqrt(d), causal");
    EXPECT_TRUE(sdpa.parameters().empty());
    EXPECT_EQ(sdpa.merged_shape({{8, 3, 16}, {8, 7, 16}, {8, 7, 5}}), (Shape{8, 3, 5}));
    EXPECT_EQ(sdpa.merged_shape({{8, 3, 16}, {8, 7, 16}}), (Shape{8, 3, 16}));
    EXPECT_GT(sdpa.merged_flops({{8, 3, 16}, {8, 7, 16}}), 0);
    EXPECT_EQ(sdpa.merged_memory({{8, 3, 16}, {8, 7, 16}}).saved_bytes, 8u * 3 * 7 * sizeof(float));
    expect_error(
        [&] {
            sdpa.merged_shape({{8, 3, 16}, {8, 7, 12}});
        },
        "'attn' (ScaledDotProductAttention): queries have 16 features but keys 12; they must be "
        "equal "
        "(query 8x3x16, key and value 8x7x12)");
    expect_error(
        [&] {
            sdpa.merged_shape({{8, 3, 16}, {8, 7, 16}, {8, 6, 5}});
        },
        "7 keys but 6 values; each key needs its value (query 8x3x16, key 8x7x16, value 8x6x5)");
    expect_error([&] { sdpa.merged_shape({{8, 3, 16}, {4, 7, 16}}); }, "different batch sizes");
    expect_error(
        [&] {
            sdpa.merged_shape({{8, 48}, {8, 7, 16}});
        },
        "'attn' (ScaledDotProductAttention): the query must be N x steps x features (batch first), "
        "got 8x48");
    expect_error([&] { sdpa.merged_shape({{8, 3, 16}}); }, "takes 2 to 3 inputs, got 1");
    expect_error([&] { sdpa.output_shape({8, 3, 16}); }, "use it as a node of an nn.Graph");
    EXPECT_THROW(ScaledDotProductAttention(scaled(0.f, false)), ConfigError);
    EXPECT_THROW(ScaledDotProductAttention(scaled(NAN, false)), ConfigError);
    EXPECT_EQ(ScaledDotProductAttention(scaled(0.25f, false)).options_text(), "scale 0.25");

    AdditiveAttention bahdanau(additive(6, 4, 10, true));
    bahdanau.set_name("align");
    std::vector<std::string> names;
    for (Parameter* p : bahdanau.parameters())
        names.push_back(p->name + " " + p->value.shape().to_string());
    EXPECT_EQ(names, (std::vector<std::string>{"query_weight 10x6", "key_weight 10x4", "bias 10",
                                               "score_weight 10"}));
    EXPECT_EQ(bahdanau.options_text(), "query 6, key 4, hidden 10");
    EXPECT_EQ(bahdanau.merged_shape({{2, 3, 6}, {2, 9, 4}, {2, 9, 7}}), (Shape{2, 3, 7}));
    EXPECT_EQ(bahdanau.merged_shape({{2, 3, 6}, {2, 9, 4}}), (Shape{2, 3, 4}));
    expect_error(
        [&] {
            bahdanau.merged_shape({{2, 3, 5}, {2, 9, 4}});
        },
        "'align' (AdditiveAttention): queries have 5 features, query_weight expects 6 "
        "(query 2x3x5, key and value 2x9x4)");
    expect_error(
        [&] {
            bahdanau.merged_shape({{2, 3, 6}, {2, 9, 5}, {2, 9, 7}});
        },
        "keys have 5 features, key_weight expects 4");
    expect_error([] { AdditiveAttention(additive(6, 4, 0, true)); },
                 "AdditiveAttention: hidden_size must be positive, got 0");
    EXPECT_EQ(AdditiveAttention(additive(6, 4, 10, false)).parameters().size(), 3u);

    // The same seed gives the same weights; a clone starts from the same values.
    AdditiveAttention again(additive(6, 4, 10, true));
    EXPECT_EQ(again.parameters()[0]->value.to_vector(),
              bahdanau.parameters()[0]->value.to_vector());
    bahdanau.initialize(3);
    EXPECT_NE(again.parameters()[0]->value.to_vector(),
              bahdanau.parameters()[0]->value.to_vector());
    auto copy = bahdanau.clone();
    EXPECT_EQ(copy->parameters()[3]->value.to_vector(),
              bahdanau.parameters()[3]->value.to_vector());
}

}  // namespace
}  // namespace tandem::test

// Layer constructors: core.nn_<kind>(plain values..., name). The Lua side (lua/tandem/nn.lua)
// turns `nn.Conv2d(1, 32, 3, {pad = 1})` into these calls after checking every option, so the
// checks here only guard against a direct call with wrong values.
#include "binding.h"
#include "layers/activation.h"
#include "layers/add_loss.h"
#include "layers/additive_attention.h"
#include "layers/batch_norm2d.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/embedding.h"
#include "layers/flatten.h"
#include "layers/graph.h"
#include "layers/layer_norm.h"
#include "layers/linear.h"
#include "layers/lrn.h"
#include "layers/merge.h"
#include "layers/narrow.h"
#include "layers/pool2d.h"
#include "layers/recurrent.h"
#include "layers/reshape.h"
#include "layers/residual.h"
#include "layers/scaled_dot_product_attention.h"
#include "layers/softmax.h"
#include "objects.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

// Names the new layer when a name is given (the last argument of every constructor).
void push_named_layer(lua_State* L, LayerPtr layer, int name_index) {
    const std::string name = opt_string(L, name_index, "");
    if (!name.empty()) layer->set_name(name);
    push_layer(L, std::move(layer));
}

// Sizes the core multiplies into a tensor's element count: refuse those whose product would
// overflow it (the core checks ranges, not products).
constexpr double kMaxElements = 1e15;

void check_elements(const char* layer, double elements) {
    TANDEM_CHECK_AS(ConfigError, elements <= kMaxElements)
        << layer << ": the parameters would hold " << elements << " elements, too many";
}

// core.nn_conv2d(in, out, kh, kw, sh, sw, ph, pw, groups, bias, init, [name])
int nn_conv2d(lua_State* L) {
    Conv2dOptions o;
    o.in_channels = check_int(L, 1);
    o.out_channels = check_int(L, 2);
    o.kernel_h = check_int(L, 3);
    o.kernel_w = check_int(L, 4);
    o.stride_h = check_int(L, 5);
    o.stride_w = check_int(L, 6);
    o.pad_h = check_int(L, 7);
    o.pad_w = check_int(L, 8);
    o.groups = check_int(L, 9);
    o.bias = check_bool(L, 10);
    o.init = check_string(L, 11);
    if (o.groups > 0)
        check_elements("Conv2d", static_cast<double>(o.out_channels) * (o.in_channels / o.groups) *
                                     o.kernel_h * o.kernel_w);
    push_named_layer(L, std::make_shared<Conv2d>(o), 12);
    return 1;
}

// core.nn_linear(in, out, bias, init, [name])
int nn_linear(lua_State* L) {
    LinearOptions o;
    o.in_features = check_int(L, 1);
    o.out_features = check_int(L, 2);
    o.bias = check_bool(L, 3);
    o.init = check_string(L, 4);
    check_elements("Linear", static_cast<double>(o.in_features) * o.out_features);
    push_named_layer(L, std::make_shared<Linear>(o), 5);
    return 1;
}

// core.nn_batch_norm2d(channels, eps, momentum, [name])
int nn_batch_norm2d(lua_State* L) {
    BatchNorm2dOptions o;
    o.channels = check_int(L, 1);
    o.epsilon = static_cast<float>(check_number(L, 2));
    o.momentum = static_cast<float>(check_number(L, 3));
    check_elements("BatchNorm2d", static_cast<double>(o.channels));
    push_named_layer(L, std::make_shared<BatchNorm2d>(o), 4);
    return 1;
}

// The window arguments shared by the poolings: kh, kw, sh, sw, ph, pw, ceil from `first`.
Pool2dOptions check_pool(lua_State* L, int first) {
    Pool2dOptions o;
    o.kernel_h = check_int(L, first);
    o.kernel_w = check_int(L, first + 1);
    o.stride_h = check_int(L, first + 2);
    o.stride_w = check_int(L, first + 3);
    o.pad_h = check_int(L, first + 4);
    o.pad_w = check_int(L, first + 5);
    o.ceil_mode = check_bool(L, first + 6);
    return o;
}

// core.nn_max_pool2d(kh, kw, sh, sw, ph, pw, ceil, [name]); a stride of 0 means the kernel's.
int nn_max_pool2d(lua_State* L) {
    const Pool2dOptions o = check_pool(L, 1);
    push_named_layer(L, std::make_shared<MaxPool2d>(o), 8);
    return 1;
}

// core.nn_avg_pool2d(kh, kw, sh, sw, ph, pw, ceil, count_include_pad, [name])
int nn_avg_pool2d(lua_State* L) {
    Pool2dOptions o = check_pool(L, 1);
    o.count_include_pad = check_bool(L, 8);
    push_named_layer(L, std::make_shared<AvgPool2d>(o), 9);
    return 1;
}

// core.nn_global_avg_pool2d([name])
int nn_global_avg_pool2d(lua_State* L) {
    push_named_layer(L, std::make_shared<GlobalAvgPool2d>(), 1);
    return 1;
}

// core.nn_lrn(size, alpha, beta, k, [name])
int nn_lrn(lua_State* L) {
    LrnOptions o;
    o.size = check_int(L, 1);
    o.alpha = static_cast<float>(check_number(L, 2));
    o.beta = static_cast<float>(check_number(L, 3));
    o.k = static_cast<float>(check_number(L, 4));
    push_named_layer(L, std::make_shared<LRN>(o), 5);
    return 1;
}

// core.nn_sequential([name])
int nn_sequential(lua_State* L) {
    push_named_layer(L, std::make_shared<Sequential>(), 1);
    return 1;
}

// core.nn_activation(algorithm, negative_slope, [name]): algorithm is one of kActivations.
int nn_activation(lua_State* L) {
    static const std::pair<std::string_view, ActivationAlgorithm> kActivations[] = {
        {"relu", ActivationAlgorithm::relu},       {"leaky_relu", ActivationAlgorithm::leaky_relu},
        {"sigmoid", ActivationAlgorithm::sigmoid}, {"tanh", ActivationAlgorithm::tanh},
        {"gelu", ActivationAlgorithm::gelu_erf},   {"gelu_tanh", ActivationAlgorithm::gelu_tanh},
    };
    const std::string wanted = check_string(L, 1);
    const auto slope = static_cast<float>(check_number(L, 2));
    for (const auto& [known, algorithm] : kActivations)
        if (wanted == known) {
            push_named_layer(L, std::make_shared<Activation>(algorithm, slope), 3);
            return 1;
        }
    TANDEM_THROW(ConfigError) << "unknown activation '" << wanted << "'";
    return 0;
}

// core.nn_dropout(p, [name])
int nn_dropout(lua_State* L) {
    const auto p = static_cast<float>(check_number(L, 1));
    push_named_layer(L, std::make_shared<Dropout>(p), 2);
    return 1;
}

// core.nn_flatten([name])
int nn_flatten(lua_State* L) {
    push_named_layer(L, std::make_shared<Flatten>(), 1);
    return 1;
}

// core.nn_residual(body, shortcut or nil, [name]): body and shortcut are Sequentials.
int nn_residual(lua_State* L) {
    auto body = check_sequential_ptr(L, 1);
    auto shortcut = lua_isnil(L, 2) ? nullptr : check_sequential_ptr(L, 2);
    push_named_layer(L, std::make_shared<Residual>(std::move(body), std::move(shortcut)), 3);
    return 1;
}

// core.nn_graph([name]): an empty graph (lua/tandem/graph.lua adds inputs, nodes, outputs).
int nn_graph(lua_State* L) {
    push_named_layer(L, std::make_shared<Graph>(), 1);
    return 1;
}

// core.nn_concat(dim, [name]), dim counted from 0 (the Lua side subtracts 1).
int nn_concat(lua_State* L) {
    push_named_layer(L, std::make_shared<Concat>(static_cast<int>(check_int(L, 1))), 2);
    return 1;
}

// core.nn_add_loss(loss, weight, [name]).
int nn_add_loss(lua_State* L) {
    push_named_layer(L,
                     std::make_shared<AddLoss>(check_loss(L, 1)->clone(),
                                               static_cast<float>(luaL_checknumber(L, 2))),
                     3);
    return 1;
}

// core.nn_add([name]) and core.nn_mul([name]).
int nn_add(lua_State* L) {
    push_named_layer(L, std::make_shared<Add>(), 1);
    return 1;
}

int nn_mul(lua_State* L) {
    push_named_layer(L, std::make_shared<Mul>(), 1);
    return 1;
}

// core.nn_narrow(dim, start, length, [name]), dim and start counted from 0.
int nn_narrow(lua_State* L) {
    push_named_layer(L,
                     std::make_shared<Narrow>(static_cast<int>(check_int(L, 1)), check_int(L, 2),
                                              check_int(L, 3)),
                     4);
    return 1;
}

// core.nn_reshape({sizes of a sample}, [name]); one size may be -1.
int nn_reshape(lua_State* L) {
    if (!lua_istable(L, 1)) throw ArgError(1, "the sizes of a sample must be a list");
    std::vector<std::int64_t> sizes;
    for_each_item(L, 1, [&](int) { sizes.push_back(check_int(L, -1)); });
    push_named_layer(L, std::make_shared<Reshape>(std::move(sizes)), 2);
    return 1;
}

// core.nn_recurrent('lstm' | 'gru', input_size, hidden_size, layers, bias, last_only, [name])
int nn_recurrent(lua_State* L) {
    RecurrentOptions o;
    const std::string cell = check_string(L, 1);
    if (cell != "lstm" && cell != "gru")
        throw ArgError(1, "cell must be 'lstm' or 'gru', got '" + cell + "'");
    o.cell = cell == "lstm" ? RnnCellKind::lstm : RnnCellKind::gru;
    o.input_size = check_int(L, 2);
    o.hidden_size = check_int(L, 3);
    o.layers = check_int(L, 4);
    o.bias = check_bool(L, 5);
    o.last_only = check_bool(L, 6);
    check_elements(cell == "lstm" ? "LSTM" : "GRU",
                   4.0 * static_cast<double>(o.hidden_size) *
                       static_cast<double>(o.input_size + o.hidden_size));
    push_named_layer(L, std::make_shared<Recurrent>(o), 7);
    return 1;
}

// core.nn_embedding(num_embeddings, embedding_dim, [name])
int nn_embedding(lua_State* L) {
    const std::int64_t count = check_int(L, 1), dim = check_int(L, 2);
    check_elements("Embedding", static_cast<double>(count) * static_cast<double>(dim));
    push_named_layer(L, std::make_shared<Embedding>(count, dim), 3);
    return 1;
}

// core.nn_softmax(dim, log, [name]): dim counted from 0, or from the end when negative.
int nn_softmax(lua_State* L) {
    push_named_layer(
        L, std::make_shared<Softmax>(static_cast<int>(check_int(L, 1)), check_bool(L, 2)), 3);
    return 1;
}

// core.nn_layer_norm({normalized_shape}, eps, affine, [name])
int nn_layer_norm(lua_State* L) {
    if (!lua_istable(L, 1)) throw ArgError(1, "normalized_shape must be a list of sizes");
    std::vector<std::int64_t> shape;
    for_each_item(L, 1, [&](int) { shape.push_back(check_int(L, -1)); });
    push_named_layer(
        L,
        std::make_shared<LayerNorm>(std::move(shape), static_cast<float>(check_number(L, 2)),
                                    check_bool(L, 3)),
        4);
    return 1;
}

// core.nn_scaled_dot_product_attention(scale or nil, causal, [name])
int nn_scaled_dot_product_attention(lua_State* L) {
    ScaledDotProductAttentionOptions o;
    if (!lua_isnil(L, 1)) o.scale = static_cast<float>(check_number(L, 1));
    o.causal = check_bool(L, 2);
    push_named_layer(L, std::make_shared<ScaledDotProductAttention>(o), 3);
    return 1;
}

// core.nn_additive_attention(query_size, key_size, hidden_size, bias, [name])
int nn_additive_attention(lua_State* L) {
    AdditiveAttentionOptions o;
    o.query_size = check_int(L, 1);
    o.key_size = check_int(L, 2);
    o.hidden_size = check_int(L, 3);
    o.bias = check_bool(L, 4);
    check_elements("AdditiveAttention", static_cast<double>(o.hidden_size) *
                                            static_cast<double>(o.query_size + o.key_size + 2));
    push_named_layer(L, std::make_shared<AdditiveAttention>(o), 5);
    return 1;
}

// core.nn_attention_weights(layer): a host copy of the attention weights of the layer's last
// forward (N x queries x keys); an error before any forward.
int nn_attention_weights(lua_State* L) {
    const LayerPtr& layer = check_layer(L, 1);
    const auto* attention = dynamic_cast<const Attention*>(layer.get());
    if (!attention)
        throw ArgError(
            1,
            "an attention layer (ScaledDotProductAttention, AdditiveAttention) expected, got a " +
                std::string(layer->kind()) + " layer");
    const Tensor& weights = attention->attention_weights();
    TANDEM_CHECK_AS(ConfigError, weights.defined())
        << layer->label() << " has no attention weights yet: they are those of its last forward";
    push_tensor(L, weights.to(host_device()));
    return 1;
}

const luaL_Reg kNnFunctions[] = {
    {"nn_sequential", wrap<nn_sequential>},
    {"nn_activation", wrap<nn_activation>},
    {"nn_conv2d", wrap<nn_conv2d>},
    {"nn_linear", wrap<nn_linear>},
    {"nn_batch_norm2d", wrap<nn_batch_norm2d>},
    {"nn_max_pool2d", wrap<nn_max_pool2d>},
    {"nn_avg_pool2d", wrap<nn_avg_pool2d>},
    {"nn_global_avg_pool2d", wrap<nn_global_avg_pool2d>},
    {"nn_lrn", wrap<nn_lrn>},
    {"nn_dropout", wrap<nn_dropout>},
    {"nn_flatten", wrap<nn_flatten>},
    {"nn_residual", wrap<nn_residual>},
    {"nn_graph", wrap<nn_graph>},
    {"nn_recurrent", wrap<nn_recurrent>},
    {"nn_softmax", wrap<nn_softmax>},
    {"nn_embedding", wrap<nn_embedding>},
    {"nn_layer_norm", wrap<nn_layer_norm>},
    {"nn_concat", wrap<nn_concat>},
    {"nn_add", wrap<nn_add>},
    {"nn_add_loss", wrap<nn_add_loss>},
    {"nn_mul", wrap<nn_mul>},
    {"nn_narrow", wrap<nn_narrow>},
    {"nn_reshape", wrap<nn_reshape>},
    {"nn_scaled_dot_product_attention", wrap<nn_scaled_dot_product_attention>},
    {"nn_additive_attention", wrap<nn_additive_attention>},
    {"nn_attention_weights", wrap<nn_attention_weights>},
    {nullptr, nullptr},
};

}  // namespace

void register_nn(lua_State* L, int module) {
    add_functions(L, module, kNnFunctions);
}

}  // namespace tandem::lua

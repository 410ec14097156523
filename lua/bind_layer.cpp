// tandem.Layer: the methods every layer has, and those of Sequential.
//
// One userdata type covers every layer kind (a Layer is a Layer, whatever its kind); the
// Sequential methods check the kind and name it when it is another one. The constructors are
// in bind_nn.cpp; the Lua side (lua/tandem/nn.lua) parses their options.
#include <optional>
#include <string>

#include "bind_graph.h"
#include "binding.h"
#include "layer_train.h"
#include "layers/graph.h"
#include "layers/merge.h"
#include "objects.h"
#include "wrap.h"

namespace tandem::lua {

LayerPtr& check_layer(lua_State* L, int index) {
    return check_box<LayerPtr>(L, index, kLayerType, "layer");
}

Sequential& check_sequential(lua_State* L, int index) {
    Layer& layer = *check_layer(L, index);
    auto* seq = dynamic_cast<Sequential*>(&layer);
    if (seq == nullptr)
        throw ArgError(index, "Sequential expected, got a " + std::string(layer.kind()) + " layer");
    return *seq;
}

std::shared_ptr<Sequential> check_sequential_ptr(lua_State* L, int index) {
    check_sequential(L, index);
    return std::static_pointer_cast<Sequential>(check_layer(L, index));
}

void push_layer(lua_State* L, LayerPtr layer) {
    push_box(L, kLayerType, std::move(layer));
}

namespace {

// layer:clone(): a separate copy (same options, name and values; its own weights), for using a
// layer's design in another net: a layer belongs to one net.
int layer_clone(lua_State* L) {
    push_layer(L, check_layer(L, 1)->clone());
    return 1;
}

int layer_kind(lua_State* L) {
    lua_pushstring(L, std::string(check_layer(L, 1)->kind()).c_str());
    return 1;
}

int layer_name(lua_State* L) {
    lua_pushstring(L, check_layer(L, 1)->name().c_str());
    return 1;
}

int layer_options_text(lua_State* L) {
    lua_pushstring(L, check_layer(L, 1)->options_text().c_str());
    return 1;
}

// layer:output_shape(shape): the output shape for an input shape (pure: no device, no memory).
int layer_output_shape(lua_State* L) {
    const Layer& layer = *check_layer(L, 1);
    const Shape input = check_shape(L, 2);
    push_shape(L, layer.output_shape(input));
    return 1;
}

void push_named(lua_State* L, const std::vector<NamedParameter>& named) {
    lua_createtable(L, 0, static_cast<int>(named.size()));
    for (const auto& p : named) {
        push_tensor(L, p.parameter->value);
        lua_setfield(L, -2, p.name.c_str());
    }
}

// layer:parameters(): {["conv1.weight"] = tensor, ...}; the tensors share the layer's memory.
int layer_parameters(lua_State* L) {
    push_named(L, named_parameters(*check_layer(L, 1)));
    return 1;
}

int layer_buffers(lua_State* L) {
    push_named(L, named_buffers(*check_layer(L, 1)));
    return 1;
}

int layer_parameter_count(lua_State* L) {
    lua_pushnumber(L, static_cast<lua_Number>(parameter_count(*check_layer(L, 1))));
    return 1;
}

// layer:memory_estimate(shape): {parameter_bytes, output_bytes, saved_bytes}.
int layer_memory_estimate(lua_State* L) {
    const Layer& layer = *check_layer(L, 1);
    const MemoryEstimate e = layer.memory_estimate(check_shape(L, 2));
    lua_createtable(L, 0, 3);
    lua_pushnumber(L, static_cast<lua_Number>(e.parameter_bytes));
    lua_setfield(L, -2, "parameter_bytes");
    lua_pushnumber(L, static_cast<lua_Number>(e.output_bytes));
    lua_setfield(L, -2, "output_bytes");
    lua_pushnumber(L, static_cast<lua_Number>(e.saved_bytes));
    lua_setfield(L, -2, "saved_bytes");
    return 1;
}

// layer:initialize(seed): draws the parameters afresh; the same seed gives the same values.
int layer_initialize(lua_State* L) {
    Layer& layer = *check_layer(L, 1);
    const auto seed = static_cast<std::uint64_t>(check_int(L, 2));
    layer.initialize(seed);
    return 0;
}

// layer:set_kernel_impl(name): picks kernels by implementation ("reference", "dnnl").
int layer_set_kernel_impl(lua_State* L) {
    Layer& layer = *check_layer(L, 1);
    layer.set_kernel_impl(opt_string(L, 2, ""));
    return 0;
}

// layer:set_precision(name): what its (and its children's) convolutions and Linear compute in
// ('fp32', 'bf16'); T.Engine's precision option sets it on the whole net.
int layer_set_precision(lua_State* L) {
    Layer& layer = *check_layer(L, 1);
    layer.set_precision(check_named(L, 2, parse_precision));
    return 0;
}

// layer:precision(): 'fp32' or 'bf16'.
int layer_precision(lua_State* L) {
    const std::string_view name = precision_name(check_layer(L, 1)->precision());
    lua_pushlstring(L, name.data(), name.size());
    return 1;
}

// layer:children(): the sub-layers of a container or block, in order.
int layer_children(lua_State* L) {
    LayerPtr layer = check_layer(L, 1);
    const auto children = layer->children();
    lua_createtable(L, static_cast<int>(children.size()), 0);
    for (std::size_t i = 0; i < children.size(); ++i) {
        // Shares ownership with the parent, which owns the child.
        push_layer(L, LayerPtr(layer, children[i]));
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    return 1;
}

// seq:add(layer): appends `layer` (named by kind and position when unnamed); returns seq.
int sequential_add(lua_State* L) {
    if (is_graph(L, 1)) return graph_add(L);  // g:add(layer, input names...)
    Sequential& seq = check_sequential(L, 1);
    LayerPtr layer = check_layer(L, 2);
    // A cycle would make every later walk over the net recurse without end.
    if (contains_layer(*layer, &seq))
        throw ArgError(2, "layer " + layer->label() +
                              " contains this Sequential (a net cannot "
                              "contain itself)");
    seq.add(std::move(layer));
    lua_settop(L, 1);
    return 1;
}

int sequential_size(lua_State* L) {
    lua_pushnumber(L, static_cast<lua_Number>(check_sequential(L, 1).size()));
    return 1;
}

// seq:get(i): the i-th layer (1-based).
int sequential_get(lua_State* L) {
    const Sequential& seq = check_sequential(L, 1);
    const auto size = static_cast<std::int64_t>(seq.size());
    if (size == 0) throw ArgError(2, "the Sequential is empty");
    const std::int64_t i = check_int_in(L, 2, 1, size, "layer index");
    push_layer(L, seq.layers()[static_cast<std::size_t>(i - 1)]);
    return 1;
}

// One summary row: {name, kind, options, output_shape (when known), parameters, depth}.
void push_row(lua_State* L, Layer& layer, const std::string& name, const Shape* output, int depth) {
    lua_createtable(L, 0, 6);
    lua_pushstring(L, name.c_str());
    lua_setfield(L, -2, "name");
    lua_pushstring(L, std::string(layer.kind()).c_str());
    lua_setfield(L, -2, "kind");
    lua_pushstring(L, layer.options_text().c_str());
    lua_setfield(L, -2, "options");
    if (output != nullptr) {
        push_shape(L, *output);
        lua_setfield(L, -2, "output_shape");
    }
    lua_pushnumber(L, static_cast<lua_Number>(parameter_count(layer)));
    lua_setfield(L, -2, "parameters");
    lua_pushnumber(L, depth);
    lua_setfield(L, -2, "depth");
}

void add_part_rows(lua_State* L, Layer& layer, const Shape* input, int depth,
                   const std::string& prefix, int& count);

bool is_container(Layer& layer) {
    return dynamic_cast<Sequential*>(&layer) != nullptr || dynamic_cast<Graph*>(&layer) != nullptr;
}

// Appends to the list on the top of the stack one row per entry of a Sequential or node of a
// Graph (with the names feeding it), each followed one level deeper by what it contains;
// output shapes when `input` is given.
void add_container_rows(lua_State* L, Layer& layer, const Shape* input, int depth,
                        const std::string& prefix, int& count) {
    if (auto* seq = dynamic_cast<Sequential*>(&layer)) {
        const std::vector<Shape> outputs =
            input ? seq->output_shapes(*input) : std::vector<Shape>();
        for (std::size_t i = 0; i < seq->size(); ++i) {
            Layer& child = seq->at(i);
            const Shape* in = input == nullptr ? nullptr : i == 0 ? input : &outputs[i - 1];
            push_row(L, child, prefix + child.name(), input ? &outputs[i] : nullptr, depth);
            lua_rawseti(L, -2, ++count);
            add_part_rows(L, child, in, depth + 1, prefix + child.name() + ".", count);
        }
        return;
    }
    auto& graph = dynamic_cast<Graph&>(layer);
    const std::vector<Shape> values = input ? graph.value_shapes({*input}) : std::vector<Shape>();
    const std::size_t inputs = graph.input_names().size();
    for (std::size_t i = 0; i < graph.node_count(); ++i) {
        Layer& node = graph.node(i);
        const Shape* in = input ? &values[graph.node_input_values(i)[0]] : nullptr;
        push_row(L, node, prefix + node.name(), input ? &values[inputs + i] : nullptr, depth);
        std::string feeds;
        for (const auto& name : graph.node_input_names(i))
            feeds += (feeds.empty() ? "" : ", ") + name;
        set_string(L, "inputs", feeds);
        lua_rawseti(L, -2, ++count);
        if (dynamic_cast<Merge*>(&node) == nullptr)
            add_part_rows(L, node, in, depth + 1, prefix + node.name() + ".", count);
    }
}

// The rows of what `layer` (whose own row is already there) contains: a container's entries,
// or a block's parts. A block feeds its own input to each part (Residual's body and shortcut).
void add_part_rows(lua_State* L, Layer& layer, const Shape* input, int depth,
                   const std::string& prefix, int& count) {
    if (is_container(layer)) return add_container_rows(L, layer, input, depth, prefix, count);
    for (Layer* part : layer.children()) {
        const std::string name = prefix + part->name();
        if (is_container(*part)) {
            add_container_rows(L, *part, input, depth, name + ".", count);
            continue;
        }
        const std::optional<Shape> out =
            input ? std::optional<Shape>(part->output_shape(*input)) : std::nullopt;
        push_row(L, *part, name, out ? &*out : nullptr, depth);
        lua_rawseti(L, -2, ++count);
        add_part_rows(L, *part, input, depth + 1, name + ".", count);
    }
}

// layer:summary_rows([input_shape]): the rows lua/tandem/summary.lua prints; output shapes
// only when an input shape (with its batch dimension) is given.
int layer_summary_rows(lua_State* L) {
    LayerPtr layer = check_layer(L, 1);
    const std::optional<Shape> input =
        lua_isnoneornil(L, 2) ? std::nullopt : std::optional<Shape>(check_shape(L, 2));
    const Shape* in = input ? &*input : nullptr;
    lua_newtable(L);
    int count = 0;
    if (is_container(*layer)) {
        add_container_rows(L, *layer, in, 0, "", count);
        return 1;
    }
    const std::optional<Shape> out =
        in ? std::optional<Shape>(layer->output_shape(*in)) : std::nullopt;
    push_row(L, *layer, layer->name(), out ? &*out : nullptr, 0);
    lua_rawseti(L, -2, ++count);
    add_part_rows(L, *layer, in, 1, layer->name().empty() ? "" : layer->name() + ".", count);
    return 1;
}

int layer_tostring(lua_State* L) {
    auto* box = static_cast<Box<LayerPtr>*>(luaL_testudata(L, 1, kLayerType));
    if (box == nullptr) throw ArgError(1, "tandem.Layer expected, got " + type_name(L, 1));
    std::string text = "Layer(freed)";
    if (box->value) {
        const Layer& layer = **box->value;
        text = std::string(layer.kind()) + " '" + layer.name() + "' (" + layer.options_text() + ")";
    }
    lua_pushstring(L, text.c_str());
    return 1;
}

const luaL_Reg kLayerMethods[] = {
    {"kind", wrap<layer_kind>},
    {"clone", wrap<layer_clone>},
    {"name", wrap<layer_name>},
    {"options_text", wrap<layer_options_text>},
    {"output_shape", wrap<layer_output_shape>},
    {"parameters", wrap<layer_parameters>},
    {"buffers", wrap<layer_buffers>},
    {"parameter_count", wrap<layer_parameter_count>},
    {"memory_estimate", wrap<layer_memory_estimate>},
    {"initialize", wrap<layer_initialize>},
    {"set_kernel_impl", wrap<layer_set_kernel_impl>},
    {"set_precision", wrap<layer_set_precision>},
    {"precision", wrap<layer_precision>},
    {"forward", wrap<layer_forward>},
    {"backward", wrap<layer_backward>},
    {"gradients", wrap<layer_gradients>},
    {"zero_grad", wrap<layer_zero_grad>},
    {"children", wrap<layer_children>},
    {"add", wrap<sequential_add>},
    {"size", wrap<sequential_size>},
    {"get", wrap<sequential_get>},
    {"summary_rows", wrap<layer_summary_rows>},
    {nullptr, nullptr},
};

}  // namespace

void register_layer(lua_State* L, int module) {
    define_type(
        L, module,
        {kLayerType, wrap<release_box<LayerPtr, kLayerType>>, kLayerMethods, wrap<layer_tostring>});
    register_layer_train(L, module);
}

}  // namespace tandem::lua

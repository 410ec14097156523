// The methods of graphs (layers/graph.h). g:add and g:forward{...} are the layer methods add
// and forward given a graph (bind_layer.cpp, bind_layer_train.cpp hand them here); the others
// are plain functions on core that lua/tandem/graph.lua turns into g:input, g:output, g:split,
// g:nodes, and nn.Graph{...} into core.graph_build.
#include "bind_graph.h"

#include "binding.h"
#include "layer_train.h"
#include "layers/graph.h"
#include "objects.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

Graph& check_graph(lua_State* L, int index) {
    Layer& layer = *check_layer(L, index);
    auto* graph = dynamic_cast<Graph*>(&layer);
    if (graph == nullptr)
        throw ArgError(index, "Graph expected, got a " + std::string(layer.kind()) + " layer");
    return *graph;
}

// A list of strings at `index`.
std::vector<std::string> check_names(lua_State* L, int index, const char* what) {
    if (!lua_istable(L, index))
        throw ArgError(index, std::string(what) + " must be a list of names");
    std::vector<std::string> names;
    for_each_item(L, index, [&](int) { names.push_back(check_string(L, -1)); });
    return names;
}

void push_names(lua_State* L, const std::vector<std::string>& names) {
    lua_createtable(L, static_cast<int>(names.size()), 0);
    for (std::size_t i = 0; i < names.size(); ++i) {
        lua_pushstring(L, names[i].c_str());
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
}

// core.graph_input(g, name): declares an input; returns its name.
int graph_input(lua_State* L) {
    Graph& g = check_graph(L, 1);
    const std::string name = check_string(L, 2);
    g.add_input(name);
    lua_pushstring(L, name.c_str());
    return 1;
}

// core.graph_output(g, {names}): the values the graph returns.
int graph_output(lua_State* L) {
    check_graph(L, 1).set_outputs(check_names(L, 2, "the outputs"));
    return 0;
}

// core.graph_build({inputs}, {{layer, {inputs}}, ...}, {outputs}, [name]): a whole graph.
int graph_build(lua_State* L) {
    const auto inputs = check_names(L, 1, "the inputs");
    if (!lua_istable(L, 2)) throw ArgError(2, "the nodes must be a list");
    std::vector<Graph::NodeSpec> nodes;
    for_each_item(L, 2, [&](int) {
        const int node = lua_gettop(L);
        lua_rawgeti(L, node, 1);
        LayerPtr layer = check_layer(L, -1);
        lua_pop(L, 1);
        lua_rawgeti(L, node, 2);
        nodes.push_back({std::move(layer), check_names(L, lua_gettop(L), "a node's inputs")});
        lua_pop(L, 1);
    });
    auto graph = Graph::build(inputs, std::move(nodes), check_names(L, 3, "the outputs"));
    const std::string name = opt_string(L, 4, "");
    if (!name.empty()) graph->set_name(name);
    push_layer(L, std::move(graph));
    return 1;
}

// core.graph_info(g): {inputs = {names}, outputs = {names}, nodes = {{name, kind, inputs}, ...}}.
int graph_info(lua_State* L) {
    const Graph& g = check_graph(L, 1);
    lua_createtable(L, 0, 3);
    push_names(L, g.input_names());
    lua_setfield(L, -2, "inputs");
    push_names(L, g.output_names());
    lua_setfield(L, -2, "outputs");
    lua_createtable(L, static_cast<int>(g.node_count()), 0);
    for (std::size_t i = 0; i < g.node_count(); ++i) {
        lua_createtable(L, 0, 3);
        set_string(L, "name", g.node(i).name());
        set_string(L, "kind", std::string(g.node(i).kind()));
        push_names(L, g.node_input_names(i));
        lua_setfield(L, -2, "inputs");
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    lua_setfield(L, -2, "nodes");
    return 1;
}

const luaL_Reg kGraphFunctions[] = {
    {"graph_input", wrap<graph_input>},
    {"graph_output", wrap<graph_output>},
    {"graph_build", wrap<graph_build>},
    {"graph_info", wrap<graph_info>},
    {nullptr, nullptr},
};

}  // namespace

bool is_graph(lua_State* L, int index) {
    return dynamic_cast<Graph*>(check_layer(L, index).get()) != nullptr;
}

int graph_add(lua_State* L) {
    Graph& g = check_graph(L, 1);
    LayerPtr layer = check_layer(L, 2);
    std::vector<std::string> inputs;
    for (int i = 3; i <= lua_gettop(L); ++i) {
        if (lua_type(L, i) != LUA_TSTRING)
            throw ArgError(i, "a node's name expected, got " + type_name(L, i));
        inputs.push_back(lua_tostring(L, i));
    }
    const std::string name = g.add(std::move(layer), inputs);
    lua_pushstring(L, name.c_str());
    return 1;
}

int graph_forward(lua_State* L) {
    Graph& g = check_graph(L, 1);
    const ForwardOptions options = check_forward_options(L, 3);
    std::vector<Tensor> xs;
    for_each_item(L, 2, [&](int i) {
        const Tensor& x = check_tensor(L, -1);
        if (x.dtype() != DType::f32)
            throw ArgError(2, "input " + std::to_string(i) + " of " + g.label() +
                                  " must be an f32 tensor, got " + x.description());
        xs.push_back(x);
    });
    TANDEM_CHECK_AS(ShapeError, xs.size() == g.input_names().size())
        << g.label() << " takes " << g.input_names().size() << " input(s), got " << xs.size();
    std::vector<Shape> shapes;
    for (const Tensor& x : xs) {
        TANDEM_CHECK_AS(ConfigError, &x.device() == &xs.front().device())
            << g.label() << ": the inputs are on " << xs.front().device().name() << " and "
            << x.device().name() << "; give them on one device";
        shapes.push_back(x.shape());
    }
    Device& device = xs.front().device();
    g.bind_graph(device, shapes, xs.front().layout());
    Tape tape;
    Pass pass{device, options.mode, 0, tape, options.seed};
    const auto ys = g.forward_graph(xs, pass);
    lua_createtable(L, static_cast<int>(ys.size()), 0);
    for (std::size_t i = 0; i < ys.size(); ++i) {
        push_tensor(L, ys[i]);
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    return 1;
}

void register_graph(lua_State* L, int module) {
    add_functions(L, module, kGraphFunctions);
}

}  // namespace tandem::lua

// What the layer methods hand to graphs (bind_graph.cpp): g:add(layer, input names...) and
// g:forward({x1, x2, ...} [, {mode, seed}]), the multi-input forward.
#pragma once

#include <lua.hpp>

namespace tandem::lua {

// Whether the layer at `index` is a Graph.
bool is_graph(lua_State* L, int index);
// The methods, with the graph at 1 (each returns what it pushed).
int graph_add(lua_State* L);
int graph_forward(lua_State* L);

}  // namespace tandem::lua

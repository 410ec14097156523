// The Layer methods that train a layer by hand from Lua (lua/bind_layer_train.cpp), listed
// with the other Layer methods in bind_layer.cpp's method table. Raw lua_CFunctions: the
// table wraps each in wrap<>.
#pragma once

#include <lua.hpp>

namespace tandem::lua {

int layer_forward(lua_State* L);
int layer_backward(lua_State* L);
int layer_gradients(lua_State* L);
int layer_zero_grad(lua_State* L);

// Defines the type that holds each layer's pending training forward (called by register_layer).
void register_layer_train(lua_State* L, int module);

}  // namespace tandem::lua

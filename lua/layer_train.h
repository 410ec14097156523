// The Layer methods that train a layer by hand from Lua (lua/bind_layer_train.cpp), listed
// with the other Layer methods in bind_layer.cpp's method table. Raw lua_CFunctions: the
// table wraps each in wrap<>.
#pragma once

#include <lua.hpp>

#include <cstdint>

#include "layers/pass.h"

namespace tandem::lua {

// forward's options table at `index`: {mode = 'eval' | 'train', seed = 0}, checked.
struct ForwardOptions {
    Mode mode = Mode::eval;
    std::uint64_t seed = 0;
};
ForwardOptions check_forward_options(lua_State* L, int index);

int layer_forward(lua_State* L);
int layer_backward(lua_State* L);
int layer_gradients(lua_State* L);
int layer_zero_grad(lua_State* L);

// Defines the type that holds each layer's pending training forward (called by register_layer).
void register_layer_train(lua_State* L, int module);

}  // namespace tandem::lua

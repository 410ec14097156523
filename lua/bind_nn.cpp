// Layer constructors: core.nn_<kind>(plain values..., name). The Lua side (lua/tandem/nn.lua)
// turns `nn.Conv2d(1, 32, 3, {pad = 1})` into these calls after checking every option, so the
// checks here only guard against a direct call with wrong values.
#include "binding.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/relu.h"
#include "layers/residual.h"
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

// core.nn_sequential([name])
int nn_sequential(lua_State* L) {
    push_named_layer(L, std::make_shared<Sequential>(), 1);
    return 1;
}

// core.nn_relu([name])
int nn_relu(lua_State* L) {
    push_named_layer(L, std::make_shared<ReLU>(), 1);
    return 1;
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

// The Sequential at `index` as a shared_ptr<Sequential> (the layer box holds a LayerPtr).
std::shared_ptr<Sequential> check_sequential_ptr(lua_State* L, int index) {
    check_sequential(L, index);
    return std::static_pointer_cast<Sequential>(check_layer(L, index));
}

// core.nn_residual(body, shortcut or nil, [name]): body and shortcut are Sequentials.
int nn_residual(lua_State* L) {
    auto body = check_sequential_ptr(L, 1);
    auto shortcut = lua_isnil(L, 2) ? nullptr : check_sequential_ptr(L, 2);
    push_named_layer(L, std::make_shared<Residual>(std::move(body), std::move(shortcut)), 3);
    return 1;
}

const luaL_Reg kFunctions[] = {
    {"nn_sequential", wrap<nn_sequential>},
    {"nn_relu", wrap<nn_relu>},
    {"nn_dropout", wrap<nn_dropout>},
    {"nn_flatten", wrap<nn_flatten>},
    {"nn_residual", wrap<nn_residual>},
    {nullptr, nullptr},
};

}  // namespace

void register_nn(lua_State* L, int module) { add_functions(L, module, kFunctions); }

}  // namespace tandem::lua

// Layer constructors: core.nn_<kind>(plain values..., name). The Lua side (lua/tandem/nn.lua)
// turns `nn.Conv2d(1, 32, 3, {pad = 1})` into these calls after checking every option, so the
// checks here only guard against a direct call with wrong values.
#include "binding.h"
#include "layers/relu.h"
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

const luaL_Reg kFunctions[] = {
    {"nn_sequential", wrap<nn_sequential>},
    {"nn_relu", wrap<nn_relu>},
    {nullptr, nullptr},
};

}  // namespace

void register_nn(lua_State* L, int module) { add_functions(L, module, kFunctions); }

}  // namespace tandem::lua

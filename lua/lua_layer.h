// Layers written in Lua (nn.Lua{forward =, backward =, parameters =, output_shape =}), and the
// lock that lets the engine's worker threads call them.
//
// A LuaLayer is a Layer like any other to the engine: it is cloned per group, bound to a stage's
// device and called from that stage's worker thread. Its forward and backward call the Lua
// functions given, on a coroutine of its own, holding the Lua state's ScriptLock
// (base/script_lock.h): the recipe's thread lends that lock while it waits in T.Engine's
// construction, steps and evaluation, so workers run Lua one at a time meanwhile.
#pragma once

#include <lua.hpp>

#include <map>
#include <memory>
#include <mutex>

#include "base/option_schema.h"
#include "base/script_lock.h"
#include "layers/layer.h"

namespace tandem::lua {

// The ScriptLock of L's Lua state (made when the module loads, by the thread loading it).
ScriptLock& script_lock(lua_State* L);

// What the clones of one nn.Lua layer share: its functions and where they run.
struct LuaScript {
    std::shared_ptr<ScriptLock> lock;  // the state's lock (kept alive by every layer using it)
    lua_State* thread = nullptr;       // a coroutine of the layer's own, anchored in the registry
    int functions = LUA_NOREF;         // registry ref of {forward, backward, output_shape}
    bool has_output_shape = false;     // without one, the output has the input's shape
};

class LuaLayer final : public Layer {
public:
    // `parameters`: name and initial value of each (copied to the host).
    LuaLayer(std::shared_ptr<const LuaScript> script,
             std::vector<std::pair<std::string, Tensor>> parameters);

    std::string_view kind() const override { return "Lua"; }
    std::string options_text() const override { return {}; }
    LayerPtr clone() const override;

    // Its output_shape function's answer (the input's shape without one), asked once per
    // input shape. ShapeError naming the layer when the function fails or answers no shape.
    Shape output_shape(const Shape& input) const override;
    // forward(params, x) -> y [, saved]: y of output_shape; `saved` (a list of tensors) is kept
    // in the pass's tape for backward.
    Tensor forward(const Tensor& x, Pass& pass) override;
    // backward(params, x, dy, saved) -> dx [, grads]: dx of x's shape; grads (name -> tensor of
    // that parameter's shape) are added into the parameters' gradients.
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;
    std::vector<Parameter*> parameters() override;
    // The values given keep: a Lua layer initialises its own parameters.
    void initialize(std::uint64_t seed) override { (void)seed; }

private:
    // Error unless the pass runs on a CPU device (Lua's tensor math reads host memory).
    void check_cpu(const Pass& pass) const;

    std::shared_ptr<const LuaScript> script_;
    std::vector<std::unique_ptr<Parameter>> parameters_;
    mutable std::mutex shapes_mutex_;
    mutable std::map<Shape, Shape> shapes_;  // output_shape's answers, by input shape
};

// core.lua_layer{forward =, backward =, parameters =, output_shape =, name =} -> layer.
void register_lua_layer(lua_State* L, int module);
// nn.Lua's options (base/option_schema.h), declared here beside the layer they build: its
// values are Lua functions, which no library of core/ holds (lua/option_table.cpp lists it with
// the others; tests/lua/test_option_schemas.lua and test_docs.lua hold it, tandem_tests links
// core/ alone).
const OptionSchema& lua_layer_option_schema();

}  // namespace tandem::lua

#include "lua_layer.h"

#include <algorithm>

#include "binding.h"
#include "kernels/kernel_cache.h"
#include "objects.h"
#include "option_table.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

constexpr const char* kScriptLockType = "tandem.ScriptLock";
constexpr const char* kScriptLockKey = "tandem.script_lock";

using LockPtr = std::shared_ptr<ScriptLock>;

LockPtr& lock_of(lua_State* L) {
    lua_getfield(L, LUA_REGISTRYINDEX, kScriptLockKey);
    auto& lock = check_box<LockPtr>(L, -1, kScriptLockType, "the Lua state's lock");
    lua_pop(L, 1);  // the registry keeps it alive
    return lock;
}

int script_lock_tostring(lua_State* L) {
    lua_pushstring(L, "ScriptLock");
    return 1;
}

// Pops and returns the error message a failed lua_pcall left on `T`.
std::string pop_message(lua_State* T) {
    std::string message =
        lua_isstring(T, -1) ? lua_tostring(T, -1) : "(an error object that is not a string)";
    lua_pop(T, 1);
    return message;
}

// Runs function `which` of the layer's script on its coroutine, holding the state's lock:
// `push_args(T)` pushes its arguments and returns how many; `read(T)` takes the results (from
// stack index 1) before they are dropped. A failing function is an E naming the layer.
template <class E = Error, class PushArgs, class Read>
void call(const LuaScript& script, const std::string& label, const char* which, PushArgs push_args,
          Read read) {
    script.lock->run(label, [&] {
        lua_State* T = script.thread;
        lua_settop(T, 0);
        lua_rawgeti(T, LUA_REGISTRYINDEX, script.functions);
        lua_getfield(T, -1, which);
        lua_remove(T, 1);
        const int args = push_args(T);
        if (lua_pcall(T, args, LUA_MULTRET, 0) != 0)
            throw E(label + ": its " + which + " function failed: " + pop_message(T));
        try {
            read(T);
        } catch (...) {
            lua_settop(T, 0);
            throw;
        }
        lua_settop(T, 0);
        return 0;
    });
}

// The first argument of forward and backward: the parameters by name.
void push_parameters(lua_State* T, const std::vector<Parameter*>& parameters) {
    lua_createtable(T, 0, static_cast<int>(parameters.size()));
    for (Parameter* p : parameters) {
        push_tensor(T, p->value);
        lua_setfield(T, -2, p->name.c_str());
    }
}

// Result `index` as an f32 tensor, or an Error naming what it is.
Tensor result_tensor(lua_State* T, int index, const std::string& label, const char* what) {
    if (!is_type(T, index, kTensorType) || check_tensor(T, index).dtype() != DType::f32)
        TANDEM_THROW(ShapeError) << label << ": " << what << " must be an f32 tensor, got "
                                 << type_name(T, index);
    return check_tensor(T, index);
}

// A result `t` of Lua code as the engine takes it: on the pass's device, in `layout` (Lua's
// tensor math answers contiguous), and in memory of its own when Lua handed back its
// argument `given` itself (an identity layer's `return x`), as every layer's output is.
Tensor placed(const Tensor& t, const Tensor& given, Device& device, Layout layout) {
    Tensor on = &t.device() == &device && t.raw() != given.raw() ? t : t.to(device);
    return on.layout() == layout || on.shape().rank() != 4 ? on : on.to_layout(layout);
}

}  // namespace

ScriptLock& script_lock(lua_State* L) {
    return *lock_of(L);
}

LuaLayer::LuaLayer(std::shared_ptr<const LuaScript> script,
                   std::vector<std::pair<std::string, Tensor>> parameters)
    : script_(std::move(script)) {
    for (auto& [name, value] : parameters) {
        auto p = std::make_unique<Parameter>();
        p->name = name;
        p->value = value.to(host_device());
        p->grad = Tensor::zeros(value.shape(), host_device());
        parameters_.push_back(std::move(p));
    }
}

LayerPtr LuaLayer::clone() const {
    std::vector<std::pair<std::string, Tensor>> values;
    for (const auto& p : parameters_) values.emplace_back(p->name, p->value);
    return finish_clone(std::make_shared<LuaLayer>(script_, std::move(values)));
}

std::vector<Parameter*> LuaLayer::parameters() {
    std::vector<Parameter*> out;
    for (auto& p : parameters_) out.push_back(p.get());
    return out;
}

Shape LuaLayer::output_shape(const Shape& input) const {
    {
        std::lock_guard<std::mutex> guard(shapes_mutex_);
        if (auto it = shapes_.find(input); it != shapes_.end()) return it->second;
    }
    Shape out = input;
    auto push_shape_arg = [&](lua_State* S) {
        push_shape(S, input);
        return 1;
    };
    auto read_shape = [&](lua_State* S) {
        try {
            out = check_shape(S, 1);
        } catch (const ArgError&) {
            TANDEM_THROW(ShapeError)
                << label()
                << ": its output_shape function must return a shape (a list of sizes) for input "
                << input.to_string();
        }
    };
    if (script_->has_output_shape)
        call<ShapeError>(*script_, label(), "output_shape", push_shape_arg, read_shape);
    TANDEM_CHECK_AS(ShapeError, out.rank() > 0 && out[0] == input[0])
        << label() << ": its output_shape function gave " << out.to_string() << " for input "
        << input.to_string() << ": the batch (first) size must stay " << input[0];
    std::lock_guard<std::mutex> guard(shapes_mutex_);
    shapes_.emplace(input, out);
    return out;
}

void LuaLayer::check_cpu(const Pass& pass) const {
    if (!pass.device.host_accessible())
        TANDEM_THROW(Error)
            << label()
            << " is written in Lua, whose tensor math runs on CPU devices; it cannot run on "
            << pass.device.name();
}

Tensor LuaLayer::forward(const Tensor& x, Pass& pass) {
    check_cpu(pass);
    const Shape want = output_shape(x.shape());
    Tensor y;
    std::vector<Tensor> saved;
    auto push_args = [&](lua_State* T) {
        push_parameters(T, parameters());
        push_tensor(T, x);
        return 2;
    };
    call(*script_, label(), "forward", push_args, [&](lua_State* T) {
        y = result_tensor(T, 1, label(), "forward's result");
        if (y.shape() != want)
            TANDEM_THROW(ShapeError) << label() << ": forward returned " << y.shape().to_string()
                                     << ", its output_shape is " << want.to_string()
                                     << " for input " << x.shape().to_string();
        if (lua_gettop(T) >= 2 && !lua_isnil(T, 2)) {
            if (!lua_istable(T, 2))
                TANDEM_THROW(Error) << label()
                                    << ": forward's second result (what backward needs) must be a "
                                       "list of tensors, got "
                                    << type_name(T, 2);
            const int n = static_cast<int>(lua_objlen(T, 2));
            for (int i = 1; i <= n; ++i) {
                lua_rawgeti(T, 2, i);
                saved.push_back(result_tensor(T, -1, label(), "each saved value"));
                lua_pop(T, 1);
            }
        }
    });
    if (pass.mode == Mode::train) pass.saved.put(this, std::move(saved));
    return placed(y, x, pass.device, x.layout());
}

Tensor LuaLayer::backward(const Tensor& x, const Tensor& dy, Pass& pass) {
    check_cpu(pass);
    std::vector<Tensor> saved;
    if (pass.saved.contains(this)) {
        saved = pass.saved.get(this);
        pass.saved.erase(this);
    }
    const auto parameters = this->parameters();
    auto push_args = [&](lua_State* T) {  // the parameters, x, dy and the list forward saved
        push_parameters(T, parameters);
        push_tensor(T, x);
        push_tensor(T, dy);
        lua_createtable(T, static_cast<int>(saved.size()), 0);
        for (std::size_t i = 0; i < saved.size(); ++i) {
            push_tensor(T, saved[i]);
            lua_rawseti(T, -2, static_cast<int>(i) + 1);
        }
        return 4;
    };
    Tensor dx;
    std::vector<std::pair<Parameter*, Tensor>> grads;
    call(*script_, label(), "backward", push_args,
         [&](lua_State* T) {
             dx = result_tensor(T, 1, label(), "backward's first result (dx)");
             if (dx.shape() != x.shape())
                 TANDEM_THROW(ShapeError)
                     << label() << ": backward returned dx of shape " << dx.shape().to_string()
                     << ", the input's is " << x.shape().to_string();
             if (lua_gettop(T) < 2 || lua_isnil(T, 2)) return;
             if (!lua_istable(T, 2))
                 TANDEM_THROW(Error)
                     << label()
                     << ": backward's second result must be a table of parameter gradients, got "
                     << type_name(T, 2);
             lua_pushnil(T);
             while (lua_next(T, 2) != 0) {
                 const std::string name =
                     lua_type(T, -2) == LUA_TSTRING ? lua_tostring(T, -2) : type_name(T, -2);
                 auto it = std::find_if(parameters.begin(), parameters.end(),
                                        [&](Parameter* p) { return p->name == name; });
                 if (it == parameters.end())
                     TANDEM_THROW(Error) << label() << ": backward gave a gradient for '" << name
                                         << "', which is not one of its parameters";
                 const Tensor g =
                     result_tensor(T, -1, label(), ("the gradient of '" + name + "'").c_str());
                 if (g.shape() != (*it)->value.shape())
                     TANDEM_THROW(ShapeError) << label() << ": the gradient of '" << name << "' is "
                                              << g.shape().to_string() << ", the parameter is "
                                              << (*it)->value.shape().to_string();
                 grads.emplace_back(*it, g);
                 lua_pop(T, 1);
             }
         });
    TensorOpsKernel& ops = tensor_ops(pass.device);
    for (auto& [p, g] : grads)
        ops.accumulate(p->grad, placed(g, p->grad, pass.device, p->grad.layout()));
    return placed(dx, dy, pass.device, x.layout());
}

namespace {

OptionSchema make_lua_layer_schema() {
    return {"nn.lua",
            "nn.Lua",
            {
                {.name = "forward",
                 .type = OptionType::function,
                 .help = "forward(p, x) -> y [, saved]: p the parameters by name, saved a list of "
                         "tensors for backward",
                 .required = true},
                {.name = "backward",
                 .type = OptionType::function,
                 .help = "backward(p, x, dy, saved) -> dx [, grads]: grads by name, added in",
                 .required = true},
                {.name = "parameters",
                 .type = OptionType::table,
                 .help = "initial values, copied",
                 .default_note = "none",
                 .expected = "a table of name = f32 tensor"},
                {.name = "output_shape",
                 .type = OptionType::function,
                 .help = "output_shape(shape) -> shape: whole shapes, batch first",
                 .default_note = "none: the input's shape"},
                {.name = "name",
                 .type = OptionType::text,
                 .help = "the layer's name (no dots)",
                 .fallback = std::string(),
                 .default_note = "none: a Sequential names it, as the built-in layers"},
            }};
}

// core.lua_layer{forward =, backward =, parameters =, output_shape =, name =}
int lua_layer_new(lua_State* L) {
    const OptionTable options(L, 1, lua_layer_option_schema());
    auto script = std::make_shared<LuaScript>();
    script->lock = lock_of(L);
    const std::string layer_name = options.text("name");
    lua_createtable(L, 0, 3);  // the functions, copied: later changes to the spec do not count
    for (const char* key : {"forward", "backward", "output_shape"}) {
        options.push(key);
        if (std::string(key) == "output_shape") script->has_output_shape = !lua_isnil(L, -1);
        lua_setfield(L, -2, key);
    }
    std::vector<std::pair<std::string, Tensor>> parameters;
    options.push("parameters");
    if (!lua_isnil(L, -1)) {
        const int table = lua_gettop(L);
        lua_pushnil(L);
        while (lua_next(L, table) != 0) {
            if (lua_type(L, -2) != LUA_TSTRING)
                throw ArgError(
                    1,
                    "nn.Lua: parameters are named: 'parameters' must be a table of name = tensor");
            const std::string name = lua_tostring(L, -2);
            if (!is_type(L, -1, kTensorType) || check_tensor(L, -1).dtype() != DType::f32)
                throw ArgError(1, "nn.Lua: parameter '" + name + "' must be an f32 tensor, got " +
                                      type_name(L, -1));
            parameters.emplace_back(name, check_tensor(L, -1));
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    std::sort(parameters.begin(), parameters.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    // Registry references live as long as the Lua state: a layer may outlive every Lua value
    // that names it (inside an engine) and is destroyed on any thread.
    script->functions = luaL_ref(L, LUA_REGISTRYINDEX);
    script->thread = lua_newthread(L);
    luaL_ref(L, LUA_REGISTRYINDEX);
    auto layer = std::make_shared<LuaLayer>(std::move(script), std::move(parameters));
    if (!layer_name.empty()) layer->set_name(layer_name);
    push_layer(L, layer);
    return 1;
}

const luaL_Reg kNoMethods[] = {{nullptr, nullptr}};

const luaL_Reg kFunctions[] = {
    {"lua_layer", wrap<lua_layer_new>},
    {nullptr, nullptr},
};

}  // namespace

const OptionSchema& lua_layer_option_schema() {
    static const OptionSchema schema = make_lua_layer_schema();
    return schema;
}

void register_lua_layer(lua_State* L, int module) {
    define_type(L, module,
                {kScriptLockType, wrap<release_box<LockPtr, kScriptLockType>>, kNoMethods,
                 wrap<script_lock_tostring>});
    push_box(L, kScriptLockType, std::make_shared<ScriptLock>());
    lua_setfield(L, LUA_REGISTRYINDEX, kScriptLockKey);
    add_functions(L, module, kFunctions);
}

}  // namespace tandem::lua

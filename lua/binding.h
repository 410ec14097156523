// How the module is put together: each bind_*.cpp file binds one type (or one group of
// functions) and exposes a register_* function; module.cpp calls them all in one list.
//
// A register_* function receives the module table's stack index. It defines its userdata type
// with define_type() (module.cpp, the one place metatables are built: __name, __gc, __index,
// __tostring, in the same shape for every type) and adds its functions with add_functions().
// Every lua_CFunction passed to either must be wrap<F> (wrap.h).
#pragma once

#include <lua.hpp>

namespace tandem::lua {

struct TypeSpec {
    const char* name;         // metatable name, e.g. kTensorType
    lua_CFunction gc;         // wrap<release_box<T, name>> (check.h)
    const luaL_Reg* methods;  // the __index table, {nullptr, nullptr}-terminated
    lua_CFunction tostring;   // __tostring
};

// Creates the metatable `spec.name` and records it in module.metatables[short name], so the
// Lua side (init.lua) can add methods written in Lua.
void define_type(lua_State* L, int module, const TypeSpec& spec);
// module[name] = function for each entry; with `table` set, into module[table][name].
void add_functions(lua_State* L, int module, const luaL_Reg* functions,
                   const char* table = nullptr);

void register_tensor(lua_State* L, int module);
// After register_tensor: adds arithmetic and math methods to its metatable.
void register_tensor_math(lua_State* L, int module);
void register_device(lua_State* L, int module);
void register_layer(lua_State* L, int module);
void register_nn(lua_State* L, int module);
// Graph methods as core.graph_* functions (lua/tandem/graph.lua makes them methods).
void register_graph(lua_State* L, int module);
void register_loss(lua_State* L, int module);
void register_io(lua_State* L, int module);
void register_data(lua_State* L, int module);
void register_loader(lua_State* L, int module);
void register_engine(lua_State* L, int module);
// core.option_schema and core.check_options (lua/bind_options.cpp).
void register_options(lua_State* L, int module);
void register_parallel(lua_State* L, int module);
void register_profile(lua_State* L, int module);
void register_plan(lua_State* L, int module);
void register_mpi(lua_State* L, int module);

// Ends the devices whose last reference went away (bind_device.cpp explains why they wait).
// Call only after lua_close, when no tensor, layer or kernel can refer to them.
void destroy_retired_devices();

}  // namespace tandem::lua

extern "C" int luaopen_tandem_core(lua_State* L);

// luaopen_tandem_core: the C half of `require 'tandem'` (lua/tandem/init.lua loads it).
//
// Every userdata type is defined here, through define_type(), in one shape (luv's
// luv_handle_init): __name for messages, __gc to release the C++ object, __index with the
// methods, __tostring. Every bound type lives in its own bind_*.cpp and is added to the list
// in luaopen_tandem_core below.
#include <cstring>

#include "binding.h"
#include "lua_layer.h"
#include "version.h"

namespace tandem::lua {

void define_type(lua_State* L, int module, const TypeSpec& spec) {
    luaL_newmetatable(L, spec.name);  // [mt]
    lua_pushstring(L, spec.name);
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, spec.gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, spec.tostring);
    lua_setfield(L, -2, "__tostring");
    lua_newtable(L);  // [mt, methods]
    luaL_setfuncs(L, spec.methods, 0);
    lua_setfield(L, -2, "__index");
    // module.metatables.Tensor = mt ("tandem.Tensor" without its prefix).
    lua_getfield(L, module, "metatables");  // [mt, metatables]
    const char* dot = std::strrchr(spec.name, '.');
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, dot != nullptr ? dot + 1 : spec.name);
    lua_pop(L, 2);
}

void add_functions(lua_State* L, int module, const luaL_Reg* functions, const char* table) {
    if (table == nullptr) {
        lua_pushvalue(L, module);
    } else {
        lua_getfield(L, module, table);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            lua_newtable(L);
            lua_pushvalue(L, -1);
            lua_setfield(L, module, table);
        }
    }
    luaL_setfuncs(L, functions, 0);
    lua_pop(L, 1);
}

namespace {

void set_build_info(lua_State* L, int module) {
    lua_pushstring(L, TANDEM_VERSION);
    lua_setfield(L, module, "version");
    lua_pushstring(L, LUAJIT_VERSION);
    lua_setfield(L, module, "luajit");
    // The backends compiled into this build; CUDA is a build option (TANDEM_CUDA).
    lua_newtable(L);
    lua_pushstring(L, "cpu");
    lua_rawseti(L, -2, 1);
#if TANDEM_CUDA
    lua_pushstring(L, "cuda");
    lua_rawseti(L, -2, 2);
#endif
    lua_setfield(L, module, "backends");
}

}  // namespace
}  // namespace tandem::lua

extern "C" int luaopen_tandem_core(lua_State* L) {
    using namespace tandem::lua;
    lua_newtable(L);
    const int module = lua_gettop(L);
    lua_newtable(L);
    lua_setfield(L, module, "metatables");
    set_build_info(L, module);

    // Each bound type or group of functions; a new bind_*.cpp adds its call here.
    register_tensor(L, module);
    register_tensor_math(L, module);
    register_device(L, module);
    register_layer(L, module);
    register_nn(L, module);
    register_graph(L, module);
    register_loss(L, module);
    register_io(L, module);
    register_data(L, module);
    register_loader(L, module);
    register_engine(L, module);
    register_options(L, module);
    register_parallel(L, module);
    register_profile(L, module);
    register_plan(L, module);
    register_mpi(L, module);
    register_lua_layer(L, module);

    lua_settop(L, module);
    return 1;
}

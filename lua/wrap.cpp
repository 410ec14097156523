#include "wrap.h"

#include <cstring>

namespace tandem::lua {

void push_error(lua_State* L, const char* message) {
    luaL_where(L, 1);  // the Lua code calling the failing function: "recipe.lua:12: "
    lua_pushstring(L, message);
    lua_concat(L, 2);
}

void push_arg_error(lua_State* L, int index, const char* message) {
    // The name the caller used for the function, as luaL_argerror finds it.
    lua_Debug ar;
    const char* name = "?";
    if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar)) {
        if (ar.name != nullptr) name = ar.name;
        if (ar.namewhat != nullptr && std::strcmp(ar.namewhat, "method") == 0) {
            // obj:method(a): the user counts `a` as argument #1, not #2.
            --index;
            if (index == 0) {
                luaL_where(L, 1);
                lua_pushfstring(L, "calling '%s' on bad self (%s)", name, message);
                lua_concat(L, 2);
                return;
            }
        }
    }
    luaL_where(L, 1);
    lua_pushfstring(L, "bad argument #%d to '%s' (%s)", index, name, message);
    lua_concat(L, 2);
}

}  // namespace tandem::lua

// The one wrapper between C++ and Lua: every lua_CFunction the module registers is wrap<F>.
//
// F reads its arguments through check.h (which throws instead of calling luaL_argerror) and
// may call into the core (which throws tandem::Error). wrap<F> catches those and raises the
// matching Lua error only after the catch block has ended, so no C++ object with a destructor
// is alive when lua_error longjmps (LuaJIT unwinds C++ frames correctly on x64, but the
// binding does not depend on it). Messages are pushed with lua_pushstring, never used as a
// format (torch7's utils.c passes messages to luaL_error as the format, and a '%' in a path
// then breaks the message).
//
// Every message starts with the Lua position of the call ("recipe.lua:12: "), as luaL_error
// does. A bad argument reads like Lua's own: "bad argument #2 to 'forward' (tandem.Tensor
// expected, got table)"; our errors give Error::full_message() (the cause, then the context
// lines); anything else is "internal error: ..." and means a bug in Tandem.
#pragma once

#include <lua.hpp>
#include <new>
#include <string>

#include "base/error.h"
#include "check.h"

namespace tandem::lua {

// Pushes "<where>bad argument #N to 'name' (message)" for the running C function, shifting
// the index for method calls as luaL_argerror does.
void push_arg_error(lua_State* L, int index, const char* message);
// Pushes "<where>message".
void push_error(lua_State* L, const char* message);

template <lua_CFunction F>
int wrap(lua_State* L) {
    try {
        return F(L);
    } catch (const ArgError& e) {
        push_arg_error(L, e.index, e.what());
    } catch (const Error& e) {
        push_error(L, e.full_message().c_str());
    } catch (const std::bad_alloc&) {
        push_error(L, "out of host memory");
    } catch (const std::exception& e) {
        push_error(L, (std::string("internal error: ") + e.what()).c_str());
    }
    // Only the error message is left to raise: every C++ object above is destroyed.
    return lua_error(L);
}

}  // namespace tandem::lua

// `tandem test FILE...`: runs Lua test files with the harness in lua/tandem/test.lua.
//
// Each file registers and runs its tests through `require 'tandem.test'`, which prints one
// line per test ("ok 3 - name" / "not ok 3 - name: why"). A file that fails outside any test
// (a syntax error, an error at load time) counts as one failed test named after the file.
// The last line is "N passed, M failed"; the exit status is 1 when anything failed.
#include <cstdio>
#include <string>

#include "commands.h"
#include "lua_state.h"
#include "tool_args.h"

namespace tandem::tool {
namespace {

// Pushes harness[name]; on failure leaves the error message instead and returns false.
bool push_harness(lua_State* L, const char* name) {
    lua_getglobal(L, "require");
    lua_pushstring(L, "tandem.test");
    if (call_protected(L, 1, 1) != 0) return false;
    lua_getfield(L, -1, name);
    lua_remove(L, -2);
    return true;
}

}  // namespace

const ToolSpec kTestSpec{
    "test",
    "FILE...",
    "run Lua test files (tandem.test harness)",
    "Each file runs its tests through `require 'tandem.test'` and prints 'ok N - name' or\n"
    "'not ok N - name: why' for each; the exit status is 1 when any failed.",
    {},
    1,
    -1};

int command_test(const Args& args) {
    help_if_asked(kTestSpec, args);
    if (args.empty()) throw CommandExit(2, "tandem test: needs FILE... (the test files to run)");
    LuaState state("test");
    lua_State* L = state.get();
    for (const auto& file : args) {
        std::printf("# %s\n", file.c_str());
        std::fflush(stdout);
        int status = luaL_loadfile(L, file.c_str());
        if (status == 0) status = call_protected(L, 0, 0);
        if (status != 0) {
            const std::string message = lua_isstring(L, -1) ? lua_tostring(L, -1) : "?";
            lua_pop(L, 1);
            if (!push_harness(L, "file_failed")) {
                report_error(L);
                return 1;
            }
            lua_pushstring(L, file.c_str());
            lua_pushstring(L, message.c_str());
            if (call_protected(L, 2, 0) != 0) {
                report_error(L);
                return 1;
            }
        }
    }
    if (!push_harness(L, "finish") || call_protected(L, 0, 1) != 0) {
        report_error(L);
        return 1;
    }
    const bool failed = lua_tonumber(L, -1) > 0;
    std::fflush(stdout);
    return failed ? 1 : 0;
}

}  // namespace tandem::tool

// `tandem run RECIPE [--key=value ...] [--flag] [positional ...]`
//
// The recipe receives its options as a table, both as the chunk's argument (`local opt = ...`)
// and as the global `opt`. "--micro-batches=4" becomes opt.micro_batches = 4: dashes in keys
// turn into underscores, "true"/"false" into booleans, numeric text into numbers, anything
// else stays a string; "--flag" alone is true. Other arguments go to opt[1], opt[2], ...
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "commands.h"
#include "lua_state.h"
#include "parallel/mpi_world.h"

namespace tandem::tool {
namespace {

void push_value(lua_State* L, const std::string& text) {
    if (text == "true" || text == "false") {
        lua_pushboolean(L, text == "true");
        return;
    }
    lua_pushstring(L, text.c_str());
    if (lua_isnumber(L, -1)) {  // Lua's own rule for numeric text ("4", "0.05", "1e-3")
        const lua_Number n = lua_tonumber(L, -1);
        lua_pop(L, 1);
        lua_pushnumber(L, n);
    }
}

}  // namespace

bool push_options(lua_State* L, const Args& args) {
    lua_newtable(L);
    int positional = 0;
    for (const auto& arg : args) {
        if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
            const auto equals = arg.find('=');
            std::string key =
                arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
            if (key.empty()) {
                std::fprintf(stderr, "tandem: option '%s' has no name\n", arg.c_str());
                return false;
            }
            for (auto& c : key)
                if (c == '-') c = '_';
            if (equals == std::string::npos)
                lua_pushboolean(L, 1);
            else
                push_value(L, arg.substr(equals + 1));
            lua_setfield(L, -2, key.c_str());
        } else {
            push_value(L, arg);
            lua_rawseti(L, -2, ++positional);
        }
    }
    return true;
}

int run_lua_command(const char* command, const char* module, const char* function, const Args& args) {
    LuaState state(command);
    lua_State* L = state.get();
    lua_getglobal(L, "require");
    lua_pushstring(L, module);
    if (call_protected(L, 1, 1) != 0) {
        report_error(L);
        return 1;
    }
    if (function) {
        lua_getfield(L, -1, function);
        lua_remove(L, -2);
    }
    if (!push_options(L, args)) return 2;
    if (call_protected(L, 1, 0) != 0) {
        report_error(L);
        return 1;
    }
    return 0;
}

namespace {

// require('tandem.host').recipe and .recipe_dir: T.recipe_dir lets a recipe load files
// next to it (dofile(T.recipe_dir .. '/nets/lenet5.lua')).
void set_recipe(lua_State* L, const std::string& recipe) {
    const auto slash = recipe.find_last_of('/');
    const std::string dir =
        slash == std::string::npos ? "." : recipe.substr(0, slash == 0 ? 1 : slash);
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "loaded");
    lua_getfield(L, -1, "tandem.host");
    lua_pushstring(L, recipe.c_str());
    lua_setfield(L, -2, "recipe");
    lua_pushstring(L, dir.c_str());
    lua_setfield(L, -2, "recipe_dir");
    lua_pop(L, 3);
}

}  // namespace

int command_run(const Args& args) {
    if (args.empty() || args[0].compare(0, 2, "--") == 0) {
        std::fprintf(stderr, "usage: tandem run RECIPE [--key=value ...]\n");
        return 2;
    }
    const std::string& recipe = args[0];
    // Under MPI only rank 0 speaks on stdout (the progress bar, the summaries): the others'
    // lines would repeat it. Their errors still reach stderr. TANDEM_ALL_RANKS=1 keeps all.
    if (mpi::rank() > 0 && std::getenv("TANDEM_ALL_RANKS") == nullptr) {
        std::fflush(stdout);
        const int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, STDOUT_FILENO), close(null);
    }
    LuaState state("run");
    lua_State* L = state.get();
    set_recipe(L, recipe);
    if (luaL_loadfile(L, recipe.c_str()) != 0) {
        std::fprintf(stderr, "error: %s\n", lua_tostring(L, -1));
        return 1;
    }
    if (!push_options(L, Args(args.begin() + 1, args.end()))) return 2;
    lua_pushvalue(L, -1);
    lua_setglobal(L, "opt");
    if (call_protected(L, 1, 0) != 0) {
        report_error(L);
        return 1;
    }
    return 0;
}

}  // namespace tandem::tool

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
#include "tool_args.h"

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

namespace {

// package.loaded['tandem.host'].options and .args: the table pushed (at the top of the stack)
// and the words it came from, so T.options can read `--name value` by its declarations.
void record_command_line(lua_State* L, const Args& args) {
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "loaded");
    lua_getfield(L, -1, "tandem.host");
    lua_pushvalue(L, -4);
    lua_setfield(L, -2, "options");
    lua_createtable(L, static_cast<int>(args.size()), 0);
    for (std::size_t i = 0; i < args.size(); ++i) {
        lua_pushstring(L, args[i].c_str());
        lua_rawseti(L, -2, static_cast<int>(i) + 1);
    }
    lua_setfield(L, -2, "args");
    lua_pop(L, 3);
}

}  // namespace

bool push_options(lua_State* L, const Args& args) {
    lua_newtable(L);
    record_command_line(L, args);
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

int run_lua_command(const char* command, const char* module, const char* function,
                    const Args& args) {
    LuaState state(command);
    lua_State* L = state.get();
    lua_getglobal(L, "require");
    lua_pushstring(L, module);
    if (call_protected(L, 1, 1) != 0) return report_error(L);
    if (function) {
        lua_getfield(L, -1, function);
        lua_remove(L, -2);
    }
    if (!push_options(L, args)) return 2;
    if (call_protected(L, 1, 0) != 0) return report_error(L);
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

const ToolSpec kRunSpec{
    "run",
    "RECIPE [options]",
    "run a Lua recipe with options",
    "`tandem run RECIPE --help` lists the recipe's options with their defaults. The recipe reads\n"
    "them with T.options (docs/lua-api.md): --epochs=3 or --epochs 3 gives opt.epochs = 3,\n"
    "--micro-batches=4 gives opt.micro_batches = 4, a true/false option alone is true.",
    {},
    1,
    -1};

int command_run(const Args& args) {
    if (args.empty())
        throw CommandExit(
            2, "tandem run: needs RECIPE (usage: tandem run RECIPE [--option=value ...])");
    if (args[0] == "--help" || args[0] == "-h") throw CommandExit(0, tool_help(kRunSpec));
    if (args[0].compare(0, 2, "--") == 0)
        throw CommandExit(
            2, "tandem run: the recipe comes first, then its options (tandem run RECIPE " +
                   args[0] + ")");
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
    if (call_protected(L, 1, 0) != 0) return report_error(L);
    return 0;
}

}  // namespace tandem::tool

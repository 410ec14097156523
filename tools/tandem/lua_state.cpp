#include "lua_state.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "binding.h"
#include "version.h"

namespace tandem::tool {
namespace {

namespace fs = std::filesystem;

// Where lua/tandem/*.lua may be: next to an installed executable (../share/tandem/lua), in
// the source tree above a build directory (../lua), and where this binary was built from.
std::string lua_path() {
    std::vector<std::string> roots;
    const std::string exe = executable_path();
    if (!exe.empty()) {
        const fs::path bin = fs::path(exe).parent_path();
        roots.push_back((bin / ".." / "lua").lexically_normal().string());
        roots.push_back((bin / ".." / "share" / "tandem" / "lua").lexically_normal().string());
    }
    roots.push_back(TANDEM_LUA_DIR);
    std::string path;
    for (const auto& root : roots) path += root + "/?.lua;" + root + "/?/init.lua;";
    return path;
}

void set_package_paths(lua_State* L) {
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "path");
    const std::string path = lua_path() + (lua_isstring(L, -1) ? lua_tostring(L, -1) : "");
    lua_pop(L, 1);
    lua_pushstring(L, path.c_str());
    lua_setfield(L, -2, "path");
    lua_getfield(L, -1, "preload");
    lua_pushcfunction(L, luaopen_tandem_core);
    lua_setfield(L, -2, "tandem.core");
    lua_pop(L, 2);
}

// package.loaded['tandem.host']: what the running program is, for recipes and tests.
void set_host_info(lua_State* L, const std::string& command) {
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "loaded");
    lua_createtable(L, 0, 3);
    lua_pushstring(L, executable_path().c_str());
    lua_setfield(L, -2, "executable");
    lua_pushstring(L, command.c_str());
    lua_setfield(L, -2, "command");
    lua_pushstring(L, TANDEM_VERSION);
    lua_setfield(L, -2, "version");
    lua_setfield(L, -2, "tandem.host");
    lua_pop(L, 2);
}

// A command's early end that is no fault of the program (lua/tandem/command_line.lua): a table
// with a number `status` and a string `message`, a command-line mistake (2) or a help text (0).
bool is_exit(lua_State* L, int index, int* status) {
    if (!lua_istable(L, index)) return false;
    if (index < 0) index = lua_gettop(L) + index + 1;  // the fields below push onto the stack
    lua_getfield(L, index, "status");
    lua_getfield(L, index, "message");
    const bool exit = lua_type(L, -2) == LUA_TNUMBER && lua_type(L, -1) == LUA_TSTRING;
    if (exit && status) *status = static_cast<int>(lua_tointeger(L, -2));
    lua_pop(L, 2);
    return exit;
}

int message_handler(lua_State* L) {
    if (is_exit(L, 1, nullptr)) return 1;  // the user's mistake: no traceback
    const char* message = lua_tostring(L, 1);
    if (message == nullptr) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            message = lua_tostring(L, -1);
        else
            message = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, message, 1);
    return 1;
}

// Ctrl-C while Lua runs: a hook raises an error at the next Lua instruction (lua.c's way;
// a long C++ call finishes first).
lua_State* g_running = nullptr;

void stop_hook(lua_State* L, lua_Debug*) {
    lua_sethook(L, nullptr, 0, 0);
    lua_pushstring(L, "interrupted");
    lua_error(L);
}

void on_interrupt(int) {
    std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the program
    if (g_running != nullptr)
        lua_sethook(g_running, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

}  // namespace

std::string executable_path() {
    std::error_code error;
    const fs::path path = fs::read_symlink("/proc/self/exe", error);
    return error ? std::string() : path.string();
}

LuaState::LuaState(const std::string& command) : L_(luaL_newstate()) {
    if (L_ == nullptr) throw std::bad_alloc();
    luaL_openlibs(L_);
    set_package_paths(L_);
    set_host_info(L_, command);
}

LuaState::~LuaState() {
    lua_close(L_);
    lua::destroy_retired_devices();  // nothing can refer to them once the state is closed
}

int call_protected(lua_State* L, int nargs, int nresults) {
    const int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, message_handler);
    lua_insert(L, base);
    g_running = L;
    auto* previous = std::signal(SIGINT, on_interrupt);
    const int status = lua_pcall(L, nargs, nresults, base);
    std::signal(SIGINT, previous);
    lua_sethook(L, nullptr, 0, 0);
    g_running = nullptr;
    lua_remove(L, base);
    return status;
}

int report_error(lua_State* L) {
    int status = 1;
    if (is_exit(L, -1, &status)) {
        lua_getfield(L, -1, "message");
        const std::string message = lua_tostring(L, -1);
        lua_pop(L, 2);
        std::fflush(stdout);
        std::fprintf(status == 0 ? stdout : stderr, status == 0 ? "%s\n" : "error: %s\n",
                     message.c_str());
        std::fflush(status == 0 ? stdout : stderr);
        return status;
    }
    std::string text = lua_isstring(L, -1) ? lua_tostring(L, -1) : "(error object not a string)";
    lua_pop(L, 1);
    // The frames under the main chunk are this program's own calls: leave them out.
    const auto main_chunk = text.find(": in main chunk");
    if (main_chunk != std::string::npos) {
        const auto end = text.find('\n', main_chunk);
        if (end != std::string::npos) text.erase(end);
    }
    std::fflush(stdout);  // what the chunk printed comes first
    std::fprintf(stderr, "error: %s\n", text.c_str());
    std::fflush(stderr);
    return 1;
}

}  // namespace tandem::tool

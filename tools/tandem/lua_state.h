// The Lua state every `tandem` sub-command runs in: standard libraries, a package.path that
// finds lua/tandem/*.lua from the build tree and from an installed layout, the C module
// preloaded as 'tandem.core', and protected calls with a Lua traceback.
#pragma once

#include <lua.hpp>
#include <string>

namespace tandem::tool {

class LuaState {
public:
    // `command` is the sub-command name, visible to Lua as require('tandem.host').command.
    explicit LuaState(const std::string& command);
    ~LuaState();
    LuaState(const LuaState&) = delete;
    LuaState& operator=(const LuaState&) = delete;

    lua_State* get() const { return L_; }

private:
    lua_State* L_;
};

// Calls the function below `nargs` arguments on the stack, with a message handler that adds
// the Lua traceback, and with Ctrl-C turned into a Lua error ("interrupted") while it runs.
// Returns lua_pcall's status; on failure the message (with traceback) is on the stack.
int call_protected(lua_State* L, int nargs, int nresults);

// Prints "error: <message>" and the traceback to stderr (the traceback stops at the main
// chunk: the frames below it are the tool's own), pops the message and returns the exit status:
// 1. A command-line mistake or a help text (lua/tandem/command_line.lua's exits) prints its
// message alone, the help on stdout, and returns its own status (2 or 0).
int report_error(lua_State* L);

// The absolute path of the running executable ("" when it cannot be found).
std::string executable_path();

}  // namespace tandem::tool

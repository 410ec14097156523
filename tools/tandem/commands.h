// The `tandem` sub-commands. Each takes the arguments after its name and returns the exit
// status; main.cpp dispatches through its table of commands.
#pragma once

#include <lua.hpp>
#include <string>
#include <vector>

namespace tandem::tool {

using Args = std::vector<std::string>;

int command_run(const Args& args);    // run.cpp
int command_repl(const Args& args);   // repl.cpp
int command_test(const Args& args);   // test_runner.cpp
int command_help(const Args& args);   // main.cpp
int command_bench(const Args& args);  // bench.cpp
int command_plan(const Args& args);   // plan.cpp
int command_devices(const Args& args);  // devices.cpp
// The data tools (issue 3).
int command_mkdb(const Args& args);        // mkdb.cpp
int command_import_idx(const Args& args);  // import_idx.cpp
int command_mean(const Args& args);        // mean.cpp
int command_dbinfo(const Args& args);      // dbinfo.cpp
int command_gen_images(const Args& args);  // gen_images.cpp

// Pushes a table of command-line options: "--micro-batches=4" is opt.micro_batches = 4 (dashes
// in keys become underscores; "true"/"false" booleans; numeric text numbers); "--flag" alone
// is true; other arguments go to opt[1], opt[2], ... Returns false (after a message) on a
// malformed option. (run.cpp)
bool push_options(lua_State* L, const Args& args);

// A sub-command written in Lua: require(module) (or its field `function` when given) called
// with the options table of `args`. Returns the exit status. (run.cpp)
int run_lua_command(const char* command, const char* module, const char* function, const Args& args);

}  // namespace tandem::tool

// The `tandem` sub-commands. Each takes the arguments after its name and returns the exit
// status; main.cpp dispatches through its table of commands.
#pragma once

#include <lua.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace tandem::tool {

using Args = std::vector<std::string>;

// One option: its name, what it takes for the help ("N", "png|jpeg|raw"; nullptr for a flag,
// true when given alone), and a line of help that says its default.
struct ToolOption {
    const char* name;
    const char* value;
    const char* help;
};

// A command's line, declared once: `tandem help` lists it, `tandem CMD --help` prints it and
// ToolArgs (tool_args.h) parses by it. The recipe-driven commands (run, bench, plan) declare
// their options in Lua (lua/tandem/command_line.lua) and print their own help.
struct ToolSpec {
    const char* name;         // "mkdb"
    const char* arguments;    // the positional arguments for the usage line: "SOURCE DB"
    const char* summary;      // one line, for `tandem help`
    const char* description;  // what it does, a few lines ("" for none)
    std::vector<ToolOption> options;
    int min_positional = 0;
    int max_positional = 0;  // -1: any number
};

// The command stops here: its help (status 0, the text for stdout) or a command-line mistake
// (status 2, the message for stderr). main.cpp prints it; there is no traceback to show.
class CommandExit : public std::runtime_error {
public:
    CommandExit(int status, const std::string& text) : std::runtime_error(text), status(status) {}
    int status;
};

// Each command: its line (defined beside it) and the function that runs it.
extern const ToolSpec kRunSpec, kTestSpec, kHelpSpec, kBenchSpec, kPlanSpec, kDevicesSpec;
extern const ToolSpec kMkdbSpec, kImportIdxSpec, kMeanSpec, kDbinfoSpec, kGenImagesSpec, kPlotSpec;
extern const ToolSpec kImportInteractionsSpec, kGenInteractionsSpec;

int command_run(const Args& args);      // run.cpp
int command_repl(const Args& args);     // repl.cpp
int command_test(const Args& args);     // test_runner.cpp
int command_help(const Args& args);     // main.cpp
int command_bench(const Args& args);    // bench.cpp
int command_plan(const Args& args);     // plan.cpp
int command_devices(const Args& args);  // devices.cpp
// The data tools (issue 3).
int command_mkdb(const Args& args);        // mkdb.cpp
int command_import_idx(const Args& args);  // import_idx.cpp
int command_mean(const Args& args);        // mean.cpp
int command_dbinfo(const Args& args);      // dbinfo.cpp
int command_gen_images(const Args& args);  // gen_images.cpp
int command_plot(const Args& args);        // plot.cpp
// Users' interaction data (issue 18).
int command_import_interactions(const Args& args);  // import_interactions.cpp
int command_gen_interactions(const Args& args);     // gen_interactions.cpp

// Pushes a table of command-line options: "--micro-batches=4" is opt.micro_batches = 4 (dashes
// in keys become underscores; "true"/"false" booleans; numeric text numbers); "--flag" alone
// is true; other arguments go to opt[1], opt[2], ... Returns false (after a message) on a
// malformed option. (run.cpp)
bool push_options(lua_State* L, const Args& args);

// A sub-command written in Lua: require(module) (or its field `function` when given) called
// with the options table of `args`. Returns the exit status. (run.cpp)
int run_lua_command(const char* command, const char* module, const char* function,
                    const Args& args);

}  // namespace tandem::tool

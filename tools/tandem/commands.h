// The `tandem` sub-commands. Each takes the arguments after its name and returns the exit
// status; main.cpp dispatches through its table of commands.
#pragma once

#include <string>
#include <vector>

namespace tandem::tool {

using Args = std::vector<std::string>;

int command_run(const Args& args);   // run.cpp
int command_repl(const Args& args);  // repl.cpp
int command_test(const Args& args);  // test_runner.cpp
int command_help(const Args& args);  // main.cpp

}  // namespace tandem::tool

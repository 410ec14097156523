// The `tandem` commands' command lines, declared once. Each command states what it takes (its
// positional arguments and options, each with a line of help) in a ToolSpec; ToolArgs parses by
// it ("--key=value", "--key value", "--flag", positional arguments) and `tandem CMD --help`
// prints it. A mistake is a CommandExit with status 2 that names the option; --help is one with
// status 0. (The recipe-driven commands, run, bench and plan, declare their options in Lua:
// lua/tandem/command_line.lua.)
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "data/data_source.h"

namespace tandem::tool {

// The usage line and the options, for --help.
std::string tool_help(const ToolSpec& spec);

// Throws CommandExit(0, help) when `args` ask for help (--help or -h anywhere).
void help_if_asked(const ToolSpec& spec, const Args& args);

class ToolArgs {
public:
    // Parses `args` by `spec`: CommandExit(2) "tandem mkdb: unknown option --x (known: ...)",
    // for a missing value, and for a positional count outside the spec's; CommandExit(0) for
    // --help.
    ToolArgs(const Args& args, const ToolSpec& spec);

    const std::vector<std::string>& positional() const { return positional_; }
    bool has(const std::string& key) const { return values_.count(key) > 0; }
    std::string text(const std::string& key, const std::string& fallback) const;
    // CommandExit(2) "tandem mkdb: --key must be an integer in [low, high], got 'x'".
    std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t low,
                         std::int64_t high) const;
    bool flag(const std::string& key) const;
    // One of `choices` (`fallback` when the option is absent): CommandExit(2) "tandem mkdb:
    // --encoding must be one of png, jpeg, raw, got 'gif'".
    std::string choice(const std::string& key, const std::string& fallback,
                       std::initializer_list<const char*> choices) const;
    // A mistake the command finds itself, worded as the others: CommandExit(2) "tandem CMD: what".
    [[noreturn]] void mistake(const std::string& what) const;

private:
    const ToolSpec& spec_;
    std::map<std::string, std::string> values_;
    std::vector<std::string> positional_;
};

// A data source from a path: an LMDB database (a directory with data.mdb, or a .mdb file), an
// image folder (any other directory), or a list file (any other file; paths relative to `root`,
// else to the list's folder). DataError when the path does not exist.
DataSourcePtr open_image_source(const std::string& path, const std::string& root = "");

// Decode threads to use by default: the machine's cores, at most 8.
int default_threads();

}  // namespace tandem::tool

// Command-line options of the data tools (mkdb, import-idx, mean, dbinfo, gen-images):
// "--key=value", "--flag" (true), positional arguments. Unknown keys are errors that list the
// known ones, as recipe options are; a bad number names the option.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "data/data_source.h"

namespace tandem::tool {

class ToolArgs {
public:
    // ConfigError "<command>: unknown option --x (known: --a, --b)".
    ToolArgs(const Args& args, const char* command, std::initializer_list<const char*> known);

    const std::vector<std::string>& positional() const { return positional_; }
    bool has(const std::string& key) const { return values_.count(key) > 0; }
    std::string text(const std::string& key, const std::string& fallback) const;
    // ConfigError "<command>: --key must be an integer in [low, high], got 'x'".
    std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t low,
                         std::int64_t high) const;
    bool flag(const std::string& key) const;

private:
    std::string command_;
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

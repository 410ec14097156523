#include "tool_args.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "base/error.h"
#include "data/file_list_source.h"
#include "data/lmdb_source.h"

namespace tandem::tool {
namespace {

const ToolOption* find_option(const ToolSpec& spec, const std::string& name) {
    for (const auto& o : spec.options)
        if (name == o.name) return &o;
    return nullptr;
}

std::string usage_line(const ToolSpec& spec) {
    std::string line = std::string("tandem ") + spec.name;
    if (*spec.arguments) line += std::string(" ") + spec.arguments;
    if (!spec.options.empty()) line += " [--option=value ...]";
    return line;
}

bool is_help(const std::string& arg) {
    return arg == "--help" || arg == "-h";
}

}  // namespace

std::string tool_help(const ToolSpec& spec) {
    std::string text = "usage: " + usage_line(spec) + "\n\n" + spec.summary + "\n";
    if (*spec.description) text += spec.description + std::string("\n");
    if (!spec.options.empty()) {
        text += "\noptions (--name=value or --name value; a flag alone is true):\n";
        for (const auto& o : spec.options) {
            std::string left =
                std::string("  --") + o.name + (o.value ? std::string("=") + o.value : "");
            if (left.size() > 26) {
                text += left + "\n";
                left.clear();
            }
            left.resize(28, ' ');
            text += left + o.help + "\n";
        }
    }
    text += "  --help                    this text\n";
    return text;
}

void help_if_asked(const ToolSpec& spec, const Args& args) {
    if (std::any_of(args.begin(), args.end(), is_help)) throw CommandExit(0, tool_help(spec));
}

ToolArgs::ToolArgs(const Args& args, const ToolSpec& spec) : spec_(spec) {
    help_if_asked(spec, args);
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a.size() <= 2 || a.compare(0, 2, "--") != 0) {
            positional_.push_back(a);
            continue;
        }
        const auto equals = a.find('=');
        const std::string key =
            a.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
        const ToolOption* option = find_option(spec, key);
        if (option == nullptr) {
            std::string list;
            for (const auto& o : spec.options)
                list += std::string(list.empty() ? "" : ", ") + "--" + o.name;
            mistake("unknown option --" + key +
                    (list.empty() ? " (it takes none but --help)" : " (known: " + list + ")"));
        }
        if (equals != std::string::npos) {
            values_[key] = a.substr(equals + 1);
        } else if (option->value == nullptr) {
            values_[key] = "true";
        } else if (i + 1 < args.size() && args[i + 1].compare(0, 2, "--") != 0) {
            values_[key] = args[++i];  // "--key value"
        } else {
            mistake("--" + key + " needs a value (--" + key + "=" + option->value + ")");
        }
    }
    const int n = static_cast<int>(positional_.size());
    const std::string usage = " (usage: " + usage_line(spec) + "; --help says more)";
    if (n < spec.min_positional) mistake(std::string("needs ") + spec.arguments + usage);
    if (spec.max_positional >= 0 && n > spec.max_positional)
        mistake("unexpected argument '" +
                positional_[static_cast<std::size_t>(spec.max_positional)] + "'" + usage);
}

void ToolArgs::mistake(const std::string& what) const {
    throw CommandExit(2, std::string("tandem ") + spec_.name + ": " + what);
}

std::string ToolArgs::text(const std::string& key, const std::string& fallback) const {
    const auto it = values_.find(key);
    return it == values_.end() ? fallback : it->second;
}

std::int64_t ToolArgs::integer(const std::string& key, std::int64_t fallback, std::int64_t low,
                               std::int64_t high) const {
    const auto it = values_.find(key);
    if (it == values_.end()) return fallback;
    std::size_t used = 0;
    long long v = 0;
    try {
        v = std::stoll(it->second, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != it->second.size() || used == 0 || v < low || v > high)
        mistake("--" + key + " must be an integer in [" + std::to_string(low) + ", " +
                std::to_string(high) + "], got '" + it->second + "'");
    return v;
}

bool ToolArgs::flag(const std::string& key) const {
    const std::string v = text(key, "false");
    if (v != "true" && v != "false")
        mistake("--" + key + " is a flag (true or false), got '" + v + "'");
    return v == "true";
}

std::string ToolArgs::choice(const std::string& key, const std::string& fallback,
                             std::initializer_list<const char*> choices) const {
    const std::string v = text(key, fallback);
    std::string list;
    for (const char* c : choices) {
        if (v == c) return v;
        list += std::string(list.empty() ? "" : ", ") + c;
    }
    mistake("--" + key + " must be one of " + list + ", got '" + v + "'");
}

DataSourcePtr open_image_source(const std::string& path, const std::string& root) {
    namespace fs = std::filesystem;
    std::error_code error;
    TANDEM_CHECK_AS(DataError, fs::exists(path, error)) << path << ": no such file or directory";
    if (fs::is_directory(path, error)) {
        if (fs::exists(fs::path(path) / "data.mdb", error))
            return std::make_shared<LmdbSource>(path);
        return folder_source(path);
    }
    if (fs::path(path).extension() == ".mdb") return std::make_shared<LmdbSource>(path);
    return list_source(path, root);
}

int default_threads() {
    return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

}  // namespace tandem::tool

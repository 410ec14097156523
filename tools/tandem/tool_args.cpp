#include "tool_args.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "base/error.h"
#include "data/file_list_source.h"
#include "data/lmdb_source.h"

namespace tandem::tool {

ToolArgs::ToolArgs(const Args& args, const char* command, std::initializer_list<const char*> known)
    : command_(command) {
    for (const auto& a : args) {
        if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
            const auto equals = a.find('=');
            const std::string key =
                a.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
            if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
                std::string list;
                for (const char* k : known)
                    list += std::string(list.empty() ? "" : ", ") + "--" + k;
                TANDEM_THROW(ConfigError)
                    << command << ": unknown option --" << key << " (known: " << list << ")";
            }
            values_[key] = equals == std::string::npos ? "true" : a.substr(equals + 1);
        } else {
            positional_.push_back(a);
        }
    }
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
    TANDEM_CHECK_AS(ConfigError, used == it->second.size() && used > 0 && v >= low && v <= high)
        << command_ << ": --" << key << " must be an integer in [" << low << ", " << high
        << "], got '" << it->second << "'";
    return v;
}

bool ToolArgs::flag(const std::string& key) const {
    const std::string v = text(key, "false");
    TANDEM_CHECK_AS(ConfigError, v == "true" || v == "false")
        << command_ << ": --" << key << " is a flag (true or false), got '" << v << "'";
    return v == "true";
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

// Where Tandem keeps what it measured about this machine between runs (the CPU's peak, a net's
// profiles), and which build measured it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace tandem {

// $TANDEM_CACHE_DIR, else $XDG_CACHE_HOME/tandem, else ~/.cache/tandem; empty when none of
// them is set (nothing is cached then).
std::filesystem::path cache_dir();

// The file of cache_dir() for `kind` ("cpu-peak", "measurements") and `key` (what its contents
// depend on): "<kind>-<hash of key>.json"; empty when there is no cache folder.
std::filesystem::path cache_file(std::string_view kind, const std::string& key);

// Writes `text` to `file` atomically, making its folder. False, throwing nothing, when it
// cannot: an unwritable cache costs the next run a measurement, nothing more.
bool write_cache_file(const std::filesystem::path& file, std::string_view text);

// The file holding Tandem's code in this process (the tandem executable, or the module a
// LuaJIT loaded) with its size and modification time: a rebuilt binary, whose kernels may run
// at other speeds, names itself differently.
std::string build_identity();

}  // namespace tandem

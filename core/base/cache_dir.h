// Where Tandem keeps what it measured about this machine between runs (the CPU's peak, a net's
// profiles), and which build measured it.
#pragma once

#include <filesystem>
#include <string>

namespace tandem {

// $TANDEM_CACHE_DIR, else $XDG_CACHE_HOME/tandem, else ~/.cache/tandem; empty when none of
// them is set (nothing is cached then).
std::filesystem::path cache_dir();

// The file holding Tandem's code in this process (the tandem executable, or the module a
// LuaJIT loaded) with its size and modification time: a rebuilt binary, whose kernels may run
// at other speeds, names itself differently.
std::string build_identity();

}  // namespace tandem

// `tandem bench NET.lua [options]` runs lua/tandem/bench.lua, which profiles the net built by
// the file NET.

#include "commands.h"

namespace tandem::tool {

// The options, their checks and --help are lua/tandem/bench.lua's.
const ToolSpec kBenchSpec{
    "bench", "NET.lua [options]", "time each layer and the whole training step of a net", "", {}, 0,
    -1};

int command_bench(const Args& args) {
    return run_lua_command("bench", "tandem.bench", nullptr, args);
}

}  // namespace tandem::tool

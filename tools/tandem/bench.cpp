// `tandem bench NET [--batch=N] [--threads=T] [--layout=...] [--iters=N] [--warmup=N] [--json]`
// runs lua/tandem/bench.lua, which profiles the net built by the file NET.
#include <cstdio>

#include "commands.h"

namespace tandem::tool {

int command_bench(const Args& args) {
    if (args.empty() || args[0].compare(0, 2, "--") == 0) {
        std::fprintf(stderr,
                     "usage: tandem bench NET.lua [--batch=N] [--threads=T] "
                     "[--layout=channels_last|contiguous] [--iters=N] [--warmup=N] [--json]\n");
        return 2;
    }
    return run_lua_command("bench", "tandem.bench", nullptr, args);
}

}  // namespace tandem::tool

// `tandem bench NET [--batch=N] [--threads=T] [--layout=...] [--iters=N] [--warmup=N] [--json]`
// runs lua/tandem/bench.lua, which profiles the net built by the file NET.
#include <cstdio>

#include "commands.h"
#include "lua_state.h"

namespace tandem::tool {

int command_bench(const Args& args) {
    if (args.empty() || args[0].compare(0, 2, "--") == 0) {
        std::fprintf(stderr,
                     "usage: tandem bench NET.lua [--batch=N] [--threads=T] "
                     "[--layout=channels_last|contiguous] [--iters=N] [--warmup=N] [--json]\n");
        return 2;
    }
    LuaState state("bench");
    lua_State* L = state.get();
    lua_getglobal(L, "require");
    lua_pushstring(L, "tandem.bench");
    if (call_protected(L, 1, 1) != 0) {
        report_error(L);
        return 1;
    }
    if (!push_options(L, args)) return 2;
    if (call_protected(L, 1, 0) != 0) {
        report_error(L);
        return 1;
    }
    return 0;
}

}  // namespace tandem::tool

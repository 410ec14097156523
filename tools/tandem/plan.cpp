// `tandem plan RECIPE --batch=B [--topology=NAME] [--devices=N] [--cost=auto|measured|analytic]
//  [--top=10] [--write=FILE] [--trace=FILE]` runs lua/tandem/plan.lua's main: the recipe's net
// planned on a topology (recipes/topologies/NAME.lua; default: this machine's CPU devices).
#include <cstdio>

#include "commands.h"

namespace tandem::tool {

int command_plan(const Args& args) {
    if (args.empty() || args[0].compare(0, 2, "--") == 0) {
        std::fprintf(stderr,
                     "usage: tandem plan RECIPE|NET.lua --batch=B [--topology=NAME] [--devices=N] "
                     "[--cost=auto|measured|analytic] [--top=10] [--write=PLAN.lua] [--trace=FILE]\n");
        return 2;
    }
    return run_lua_command("plan", "tandem.plan", "main", args);
}

}  // namespace tandem::tool

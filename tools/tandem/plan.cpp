// `tandem plan RECIPE --batch=B [options]` runs lua/tandem/plan.lua's main: the recipe's net
// planned on a topology (recipes/topologies/NAME.lua; default: this machine's CPU devices).

#include "commands.h"

namespace tandem::tool {

// The options, their checks and --help are lua/tandem/plan.lua's.
const ToolSpec kPlanSpec{
    "plan",
    "RECIPE --batch=B [options]",
    "rank every layout (groups, stages, micro-batches, pipeline) by simulation",
    "",
    {},
    0,
    -1};

int command_plan(const Args& args) {
    return run_lua_command("plan", "tandem.plan", "main", args);
}

}  // namespace tandem::tool

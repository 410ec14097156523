// The options of the planner's functions, once (base/option_schema.h): T.plan.costs,
// T.plan.search, T.plan.simulate and the plan table it takes, costs:layers, and T.profile. The
// binding checks each table against its schema in one loop (lua/bind_plan.cpp,
// lua/bind_profile.cpp), Lua reads them as core.option_schema('plan.search') and so on, and
// docs/lua-api.md's tables of them are held to them by tests/lua/test_docs.lua.
//
// The options a search and a simulation share (the cost model's, the topology, the batch, the
// gradients' all-reduce) are declared once and each of the two schemas extends them; the cost
// model's and the profiler's timing options (warmup, iterations, layout, seed) are T.profile's
// too. The defaults are those of the structs they fill (PlannerOptions, Plan, ProfileOptions's
// counts); tests/core/base/test_option_schema.cpp holds them together.
#pragma once

#include <string_view>
#include <vector>

#include "base/option_schema.h"
#include "parallel/communicator.h"

namespace tandem {

// The planner's `algorithm` (T.plan.search, T.plan.simulate, T.plan.all_reduce, tandem plan),
// declared once: the engine's 'ring' and 'tree' (NCCL's Simple protocol), 'auto' (NCCL's own
// choice of algorithm and protocol for each bucket's size, NVLS where the switch reduces:
// Plan::nccl_auto) and 'server' (a parameter server on one GPU, Plan::parameter_server, a
// baseline the engine does not run).
struct PlanAlgorithm {
    ReduceAlgorithm algorithm = ReduceAlgorithm::ring;  // what the engine runs; 'auto': ring
    bool nccl_auto = false;
    bool parameter_server = false;
};
std::vector<std::string_view> plan_algorithm_names();
// Throws ConfigError listing the choices for a name that is not one.
PlanAlgorithm parse_plan_algorithm(std::string_view name);

const OptionSchema& plan_costs_option_schema();     // T.plan.costs{...}
const OptionSchema& plan_search_option_schema();    // T.plan.search{...}
const OptionSchema& plan_simulate_option_schema();  // T.plan.simulate{...}
// T.plan.simulate's plan = {...} (and each of plans = {{...}, ...}), named 'plan.x' in messages.
const OptionSchema& plan_table_option_schema();
const OptionSchema& plan_layers_option_schema();  // costs:layers{...}
const OptionSchema& profile_option_schema();      // T.profile(net, sample, device, {...})

}  // namespace tandem

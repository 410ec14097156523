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

#include "base/option_schema.h"

namespace tandem {

const OptionSchema& plan_costs_option_schema();     // T.plan.costs{...}
const OptionSchema& plan_search_option_schema();    // T.plan.search{...}
const OptionSchema& plan_simulate_option_schema();  // T.plan.simulate{...}
// T.plan.simulate's plan = {...} (and each of plans = {{...}, ...}), named 'plan.x' in messages.
const OptionSchema& plan_table_option_schema();
const OptionSchema& plan_layers_option_schema();  // costs:layers{...}
const OptionSchema& profile_option_schema();      // T.profile(net, sample, device, {...})

}  // namespace tandem

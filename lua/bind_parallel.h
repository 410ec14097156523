// T.Engine's parallel table, read through the parallel options' schema (bind_parallel.cpp).
#pragma once

#include <lua.hpp>

#include <string>

#include "layers/sequential.h"
#include "parallel/parallel_options.h"
#include "parallel/parallel_schema.h"

namespace tandem::lua {

// The parallel options at `index` (nil: the defaults); split names are resolved against `net`'s
// top-level layers. The old name `schedule` is taken for `pipeline`, with a warning once.
ParallelOptions check_parallel(lua_State* L, int index, const Sequential& net);

// The placement under `key` in the table at `index`: stages, each a list of layer names
// (parallel.placement's form). ConfigError starting with `what` otherwise.
StageNames read_placement(lua_State* L, int index, const char* key, const std::string& what);

}  // namespace tandem::lua

// T.Engine's parallel table, read through the parallel options' schema (bind_parallel.cpp).
#pragma once

#include <lua.hpp>

#include "layers/sequential.h"
#include "parallel/parallel_options.h"

namespace tandem::lua {

// The parallel options at `index` (nil: the defaults); split names are resolved against `net`'s
// top-level layers. The old name `schedule` is taken for `pipeline`, with a warning once.
ParallelOptions check_parallel(lua_State* L, int index, const Sequential& net);

}  // namespace tandem::lua

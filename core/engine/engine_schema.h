// T.Engine's options, once (base/option_schema.h): the binding checks a T.Engine{...} table
// against them (lua/tandem/engine.lua, through core.check_options('engine', ...)), Lua reads
// them as core.option_schema('engine'), and docs/lua-api.md's table of them is held to them by
// tests/lua/test_docs.lua. The `parallel` table has its own schema (parallel/parallel_schema.h).
// A new option is an entry here, a field of EngineOptions (engine.h) and its reading in
// lua/bind_engine.cpp.
#pragma once

#include "base/option_schema.h"

namespace tandem {

const OptionSchema& engine_option_schema();

}  // namespace tandem

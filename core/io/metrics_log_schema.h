// T.MetricsLog's options, once (base/option_schema.h): the binding checks a T.MetricsLog(path,
// {...}) table against them (lua/bind_profile.cpp), Lua reads them as
// core.option_schema('metrics_log'), and docs/lua-api.md's table of them is held to them by
// tests/lua/test_docs.lua. `append` is MetricsLog's own default; `chart` is on from Lua (a
// recipe's log is read as curves), off for C++ callers, which draw none unless asked.
#pragma once

#include "base/option_schema.h"

namespace tandem {

const OptionSchema& metrics_log_option_schema();

}  // namespace tandem

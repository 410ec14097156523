// T.tensor's options, once (base/option_schema.h): the binding checks a T.tensor(values, shape,
// {...}) table against them (lua/bind_tensor.cpp), Lua reads them as
// core.option_schema('tensor'), and docs/lua-api.md's table of them is held to them by
// tests/lua/test_docs.lua. One option, `dtype`, but its choices are declared here and nowhere
// else: the messages and the API reference list them from this.
#pragma once

#include "base/option_schema.h"

namespace tandem {

const OptionSchema& tensor_option_schema();

}  // namespace tandem

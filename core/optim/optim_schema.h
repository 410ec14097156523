// The optimizers' options, once (base/option_schema.h): T.optim.SGD{...}, T.optim.Adam{...} and
// T.optim.AdamW{...}. The binding checks each table against its schema in one loop
// (lua/bind_engine.cpp), Lua reads them as core.option_schema('optim.sgd') and so on, and
// docs/lua-api.md's tables of them are held to them by tests/lua/test_docs.lua. The defaults are
// SgdOptions' and AdamOptions' (optimizer.h), but AdamW's weight decay, 0.01 as PyTorch's;
// tests/core/base/test_option_schema.cpp holds them together. What one option cannot say alone
// (Nesterov momentum needs momentum and no dampening) is the optimizer's own check.
#pragma once

#include "base/option_schema.h"

namespace tandem {

const OptionSchema& sgd_option_schema();    // T.optim.SGD
const OptionSchema& adam_option_schema();   // T.optim.Adam: weight decay as an L2 penalty
const OptionSchema& adamw_option_schema();  // T.optim.AdamW: weight decay decoupled

}  // namespace tandem

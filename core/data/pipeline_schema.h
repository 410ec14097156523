// T.data.Loader's options, once (base/option_schema.h), and those of its shard table: the
// binding checks a T.data.Loader{...} table against them in one loop (lua/bind_loader.cpp), Lua
// reads them as core.option_schema('loader') and core.option_schema('loader.shard'), and
// docs/lua-api.md's table of them is held to them by tests/lua/test_docs.lua. The defaults here
// are LoaderOptions' (data/loader_options.h); tests/core/base/test_option_schema.cpp holds the
// two together. A new option is an entry here, a field of LoaderOptions and its reading in
// lua/bind_loader.cpp.
#pragma once

#include "base/option_schema.h"

namespace tandem {

const OptionSchema& loader_option_schema();
// shard = {index =, count =}: named "shard.index" and "shard.count" in messages.
const OptionSchema& loader_shard_option_schema();
// transforms = {crop =, flip =, ...}: "transforms.crop" in messages. The defaults are
// TransformOptions' (data/transform.h); ImageTransform still checks what a range cannot say (1 or
// 3 channels, std above 0, pad only with a crop), for callers from C++.
const OptionSchema& loader_transform_option_schema();

}  // namespace tandem

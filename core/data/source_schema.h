// The options of the data sets' constructors, once (base/option_schema.h): T.data.lmdb,
// T.data.list, T.data.folder (none), T.data.mnist, T.data.interactions and
// T.data.interactions_info, and the augmentation table of dataset:batch. As the loader's
// (pipeline_schema.h): the binding checks each table against its schema in one loop
// (lua/bind_loader.cpp, lua/bind_data.cpp), Lua reads them as core.option_schema('data.lmdb')
// and so on, and docs/lua-api.md's tables of them are held to them by tests/lua/test_docs.lua.
// The defaults are those of the C++ functions and structs they fill (LmdbSource, list_source,
// InteractionShape, AugmentOptions); tests/core/base/test_option_schema.cpp holds them together.
#pragma once

#include "base/option_schema.h"

namespace tandem {

const OptionSchema& lmdb_option_schema();    // {classes}
const OptionSchema& list_option_schema();    // {root, classes}
const OptionSchema& folder_option_schema();  // none: a key is refused, "it takes no options"
const OptionSchema& mnist_option_schema();   // {mean, std}
// {length, features}: the same options, named with each function in messages.
const OptionSchema& interactions_option_schema();
const OptionSchema& interactions_info_option_schema();
// dataset:batch's `augment` table: {flip, crop_pad, fill}.
const OptionSchema& augment_option_schema();

}  // namespace tandem

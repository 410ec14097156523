#include "data/pipeline_schema.h"

#include "tensor/tensor.h"

namespace tandem {
namespace {

// A count or seed above 2^53 is no longer read exactly from a Lua number.
constexpr double kExact = 9007199254740992.0;  // 2^53

OptionSchema make_loader_schema() {
    const std::vector<std::string_view> layouts{layout_name(Layout::contiguous),
                                                layout_name(Layout::channels_last)};
    return {"loader",
            "T.data.Loader",
            {
                {.name = "source",
                 .type = OptionType::object,
                 .help = "the samples: T.data.folder, T.data.lmdb or T.data.list",
                 .object = "tandem.Source",
                 .expected = "a data source (T.data.folder, T.data.lmdb, T.data.list)",
                 .required = true},
                {.name = "batch",
                 .type = OptionType::integer,
                 .help = "samples per batch",
                 .fallback = 32.0,
                 .low = 1,
                 .high = 16777216},
                {.name = "transforms",
                 .type = OptionType::table,
                 .help = "what is done to each image, in a fixed order (below)",
                 .default_note = "{}",
                 .expected = "a table of transforms ({crop = 24, flip = true, ...})"},
                {.name = "threads",
                 .type = OptionType::integer,
                 .help = "decode and augment threads (the reader and the assembly have one each)",
                 .fallback = 2.0,
                 .low = 1,
                 .high = 256},
                {.name = "shard",
                 .type = OptionType::table,
                 .help = "{index = k, count = n}: positions k, k + n, ... of each epoch's order",
                 .default_note = "{index = 1, count = 1}",
                 .expected = "a table {index =, count =}"},
                {.name = "last",
                 .type = OptionType::choice,
                 .help = "the epoch's last partial batch: dropped, kept smaller, or padded to size",
                 .fallback = std::string("drop"),
                 .choices = {"drop", "keep", "pad"}},
                {.name = "device",
                 .type = OptionType::object,
                 .help = "where batches are written",
                 .default_note = "the host",
                 .object = "tandem.Device",
                 .expected = "a device (from T.devices)"},
                {.name = "layout",
                 .type = OptionType::choice,
                 .help = "how batches are laid out (channels_last: NHWC, contiguous: NCHW)",
                 .fallback = std::string(layout_name(Layout::contiguous)),
                 .choices = layouts},
                {.name = "seed",
                 .type = OptionType::integer,
                 .help = "draws the order and every random choice, with the epoch and the sample",
                 .fallback = 1.0,
                 .low = 0,
                 .high = kExact},
                {.name = "shuffle",
                 .type = OptionType::flag,
                 .help = "a fresh permutation each epoch (false: the source's order)",
                 .fallback = true},
                {.name = "strict",
                 .type = OptionType::flag,
                 .help = "a corrupt image stops the epoch (false: skipped, counted and warned of)",
                 .fallback = false},
                {.name = "prefetch",
                 .type = OptionType::integer,
                 .help = "batches assembled ahead of the consumer",
                 .fallback = 2.0,
                 .low = 1,
                 .high = 1024},
                {.name = "quiet",
                 .type = OptionType::flag,
                 .help = "no warnings on stderr for skipped images",
                 .fallback = false},
            }};
}

OptionSchema make_shard_schema() {
    return {"loader.shard",
            "T.data.Loader",
            {
                {.name = "index",
                 .type = OptionType::integer,
                 .help = "which shard, from 1",
                 .fallback = 1.0,
                 .low = 1,
                 .high = 1048576,
                 .note = "at most count",
                 .at_most = "count"},
                {.name = "count",
                 .type = OptionType::integer,
                 .help = "how many loaders share the epoch",
                 .fallback = 1.0,
                 .low = 1,
                 .high = 1048576},
            }};
}

}  // namespace

const OptionSchema& loader_option_schema() {
    static const OptionSchema schema = make_loader_schema();
    return schema;
}

const OptionSchema& loader_shard_option_schema() {
    static const OptionSchema schema = make_shard_schema();
    return schema;
}

}  // namespace tandem

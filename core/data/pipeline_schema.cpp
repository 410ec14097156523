#include "data/pipeline_schema.h"

#include <cmath>

#include "tensor/tensor.h"

namespace tandem {
namespace {

// Image sides, crops and padding in pixels: far above any image OpenCV decodes, far below int's
// limit (the transforms keep them as int).
constexpr double kMaxSide = 65536;

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
                 .high = kOptionUnbounded},
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

// The colour jitters: factors drawn from [max(0, 1 - x), 1 + x].
OptionSpec jitter(std::string_view name, std::string_view help) {
    return {.name = name,
            .type = OptionType::number,
            .help = help,
            .fallback = 0.0,
            .low = 0,
            .high = HUGE_VAL};
}

OptionSchema make_transform_schema() {
    return {
        "loader.transforms",
        "T.data.Loader",
        {
            {.name = "channels",
             .type = OptionType::integer,
             .help = "convert to 1 (grey) or 3 (RGB) channels",
             .fallback = 0.0,
             .low = 0,
             .high = 3,
             .note = "0: as stored"},
            {.name = "resize",
             .type = OptionType::integer,
             .help = "the shorter side scaled to this many pixels",
             .fallback = 0.0,
             .low = 0,
             .high = kMaxSide,
             .note = "0: as stored"},
            {.name = "crop",
             .type = OptionType::extent,
             .help = "the output size; without it every image must already have one size",
             .fallback = 0.0,
             .default_note = "none",
             .low = 1,
             .high = kMaxSide},
            {.name = "random_crop",
             .type = OptionType::flag,
             .help = "the crop placed at random (false: in the centre)",
             .fallback = false},
            {.name = "pad",
             .type = OptionType::integer,
             .help = "pixels of `fill` around the image before cropping",
             .fallback = 0.0,
             .low = 0,
             .high = kMaxSide},
            {.name = "fill",
             .type = OptionType::integer,
             .help = "the padding pixels' value",
             .fallback = 0.0,
             .low = 0,
             .high = 255},
            {.name = "flip",
             .type = OptionType::flag,
             .help = "mirrored left-right with probability 1/2",
             .fallback = false},
            jitter("brightness", "colour jitter: brightness factor from [1 - x, 1 + x]"),
            jitter("contrast", "colour jitter: contrast factor from [1 - x, 1 + x]"),
            jitter("saturation", "colour jitter: saturation factor from [1 - x, 1 + x]"),
            {.name = "mean",
             .type = OptionType::numbers,
             .help = "subtracted, on the 0..1 scale: one value, or one per channel in RGB order",
             .fallback = 0.0},
            {.name = "std",
             .type = OptionType::numbers,
             .help = "divided by after the mean, above 0: one value, or one per channel",
             .fallback = 1.0},
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

const OptionSchema& loader_transform_option_schema() {
    static const OptionSchema schema = make_transform_schema();
    return schema;
}

}  // namespace tandem

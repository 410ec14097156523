#include "data/source_schema.h"

#include <cmath>

#include "data/interactions.h"

namespace tandem {
namespace {

OptionSpec classes_option() {
    return {.name = "classes",
            .type = OptionType::integer,
            .help = "the class count: a larger label is an error",
            .fallback = 0.0,
            .low = 0,
            .high = kOptionUnbounded,
            .note = "0: the largest label + 1"};
}

OptionSchema make_lmdb_schema() {
    return {"data.lmdb", "T.data.lmdb", {classes_option()}};
}

OptionSchema make_list_schema() {
    return {"data.list",
            "T.data.list",
            {
                {.name = "root",
                 .type = OptionType::text,
                 .help = "the folder the list's relative paths are taken from",
                 .fallback = std::string(),
                 .default_note = "the file's folder"},
                classes_option(),
            }};
}

OptionSchema make_mnist_schema() {
    return {"data.mnist",
            "T.data.mnist",
            {
                {.name = "mean",
                 .type = OptionType::number,
                 .help = "subtracted from each pixel, on the 0..1 scale",
                 .fallback = 0.0,
                 .low = -HUGE_VAL,
                 .high = HUGE_VAL},
                {.name = "std",
                 .type = OptionType::number,
                 .help = "divided by after the mean",
                 .fallback = 1.0,
                 .low = 0,
                 .high = HUGE_VAL,
                 .above_low = true},
            }};
}

OptionSchema make_interactions_schema(std::string_view name, std::string_view function) {
    const auto max = static_cast<double>(kMaxInteractionWidth);
    return {name,
            function,
            {
                {.name = "length",
                 .type = OptionType::integer,
                 .help = "item ids per sample: the last ones, padded with 0 in front",
                 .fallback = 0.0,
                 .low = 0,
                 .high = max,
                 .note = "0: the longest sequence, or a database's own"},
                {.name = "features",
                 .type = OptionType::integer,
                 .help = "feature values per sample, after the ids",
                 .fallback = 0.0,
                 .low = 0,
                 .high = max,
                 .note = "0: the largest index + 1, or a database's own"},
            }};
}

OptionSchema make_augment_schema() {
    return {"dataset.batch",
            "dataset:batch",
            {
                {.name = "flip",
                 .type = OptionType::flag,
                 .help = "mirrored left-right with probability 1/2",
                 .fallback = false},
                {.name = "crop_pad",
                 .type = OptionType::integer,
                 .help = "shifted by up to this many pixels each way (less than the image's side)",
                 .fallback = 0.0,
                 .low = 0,
                 .high = kOptionUnbounded},
                {.name = "fill",
                 .type = OptionType::number,
                 .help = "the value of the pixels shifted in (after normalisation)",
                 .fallback = 0.0,
                 .low = -HUGE_VAL,
                 .high = HUGE_VAL},
            }};
}

}  // namespace

const OptionSchema& lmdb_option_schema() {
    static const OptionSchema schema = make_lmdb_schema();
    return schema;
}

const OptionSchema& list_option_schema() {
    static const OptionSchema schema = make_list_schema();
    return schema;
}

const OptionSchema& folder_option_schema() {
    static const OptionSchema schema{"data.folder", "T.data.folder", {}};
    return schema;
}

const OptionSchema& mnist_option_schema() {
    static const OptionSchema schema = make_mnist_schema();
    return schema;
}

const OptionSchema& interactions_option_schema() {
    static const OptionSchema schema =
        make_interactions_schema("data.interactions", "T.data.interactions");
    return schema;
}

const OptionSchema& interactions_info_option_schema() {
    static const OptionSchema schema =
        make_interactions_schema("data.interactions_info", "T.data.interactions_info");
    return schema;
}

const OptionSchema& augment_option_schema() {
    static const OptionSchema schema = make_augment_schema();
    return schema;
}

}  // namespace tandem

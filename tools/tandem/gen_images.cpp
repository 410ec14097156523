// `tandem gen-images DIR [--classes=4] [--per-class=16] [--min-size=64] [--max-size=256]
// [--square] [--seed=1] [--format=jpg|png] [--quality=90]`: a synthetic image folder
// (core/data/synthetic_images.h) for tests, benchmarks and the JPEG recipe.
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "data/synthetic_images.h"
#include "tool_args.h"

namespace tandem::tool {

const ToolSpec kGenImagesSpec{"gen-images",
                              "DIR",
                              "write a synthetic colour-image folder",
                              "Coloured shapes on noise, one sub-folder per class, for tests, "
                              "benchmarks and the JPEG recipe.",
                              {{"classes", "N", "classes (default 4)"},
                               {"per-class", "N", "images a class (default 16)"},
                               {"min-size", "PX", "the smallest side (default 64)"},
                               {"max-size", "PX", "the largest side (default 256)"},
                               {"square", nullptr, "square images only"},
                               {"seed", "S", "the seed (default 1)"},
                               {"format", "jpg|png", "the file format (default jpg)"},
                               {"quality", "Q", "JPEG quality 1..100 (default 90)"},
                               {"overwrite", nullptr, "write into DIR even when it is not empty"}},
                              1,
                              1};

int command_gen_images(const Args& args) {
    const ToolArgs a(args, kGenImagesSpec);
    SyntheticOptions o;
    o.classes = static_cast<int>(a.integer("classes", 4, 1, 1000));
    o.per_class = static_cast<int>(a.integer("per-class", 16, 1, 1 << 20));
    o.min_size = static_cast<int>(a.integer("min-size", 64, 8, 4096));
    o.max_size = static_cast<int>(a.integer("max-size", 256, 8, 4096));
    if (o.min_size > o.max_size)
        a.mistake("--min-size (" + std::to_string(o.min_size) + ") must not exceed --max-size (" +
                  std::to_string(o.max_size) + ")");
    o.square = a.flag("square");
    o.seed = static_cast<std::uint64_t>(a.integer("seed", 1, 0, INT64_MAX));
    o.format = a.choice("format", "jpg", {"jpg", "png"});
    o.quality = static_cast<int>(a.integer("quality", 90, 1, 100));
    // New images among old ones (another run's classes, sizes or format) would make a folder
    // that is neither set: refuse unless asked (issue 19).
    const std::string& dir = a.positional()[0];
    std::error_code error;
    if (!a.flag("overwrite") && std::filesystem::is_directory(dir, error) &&
        !std::filesystem::is_empty(dir, error))
        throw CommandExit(1, "tandem gen-images: " + dir +
                                 " is not empty; give a new or empty folder, or "
                                 "--overwrite to write into it");
    const auto n = write_synthetic_images(dir, o);
    std::printf("wrote %lld %s images in %d classes to %s\n", static_cast<long long>(n),
                o.format.c_str(), o.classes, a.positional()[0].c_str());
    return 0;
}

}  // namespace tandem::tool

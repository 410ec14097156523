// `tandem gen-images DIR [--classes=4] [--per-class=16] [--min-size=64] [--max-size=256]
// [--square] [--seed=1] [--format=jpg|png] [--quality=90]`: a synthetic image folder
// (core/data/synthetic_images.h) for tests, benchmarks and the JPEG recipe.
#include <cstdio>

#include "commands.h"
#include "data/synthetic_images.h"
#include "tool_args.h"

namespace tandem::tool {

const ToolSpec kGenImagesSpec{
    "gen-images", "DIR", "write a synthetic colour-image folder",
    "Coloured shapes on noise, one sub-folder per class, for tests, benchmarks and the JPEG recipe.",
    {{"classes", "N", "classes (default 4)"},
     {"per-class", "N", "images a class (default 16)"},
     {"min-size", "PX", "the smallest side (default 64)"},
     {"max-size", "PX", "the largest side (default 256)"},
     {"square", nullptr, "square images only"},
     {"seed", "S", "the seed (default 1)"},
     {"format", "jpg|png", "the file format (default jpg)"},
     {"quality", "Q", "JPEG quality 1..100 (default 90)"}},
    1, 1};

int command_gen_images(const Args& args) {
    const ToolArgs a(args, kGenImagesSpec);
    SyntheticOptions o;
    o.classes = static_cast<int>(a.integer("classes", 4, 1, 1000));
    o.per_class = static_cast<int>(a.integer("per-class", 16, 1, 1 << 20));
    o.min_size = static_cast<int>(a.integer("min-size", 64, 8, 4096));
    o.max_size = static_cast<int>(a.integer("max-size", 256, 8, 4096));
    o.square = a.flag("square");
    o.seed = static_cast<std::uint64_t>(a.integer("seed", 1, 0, INT64_MAX));
    o.format = a.text("format", "jpg");
    o.quality = static_cast<int>(a.integer("quality", 90, 1, 100));
    const auto n = write_synthetic_images(a.positional()[0], o);
    std::printf("wrote %lld %s images in %d classes to %s\n", static_cast<long long>(n),
                o.format.c_str(), o.classes, a.positional()[0].c_str());
    return 0;
}

}  // namespace tandem::tool

// `tandem gen-images DIR [--classes=4] [--per-class=16] [--min-size=64] [--max-size=256]
// [--square] [--seed=1] [--format=jpg|png] [--quality=90]`: a synthetic image folder
// (core/data/synthetic_images.h) for tests, benchmarks and the JPEG recipe.
#include <cstdio>

#include "commands.h"
#include "data/synthetic_images.h"
#include "tool_args.h"

namespace tandem::tool {

int command_gen_images(const Args& args) {
    const ToolArgs a(
        args, "gen-images",
        {"classes", "per-class", "min-size", "max-size", "square", "seed", "format", "quality"});
    if (a.positional().size() != 1) {
        std::fprintf(stderr,
                     "usage: tandem gen-images DIR [--classes=4] [--per-class=16] [--min-size=64] "
                     "[--max-size=256] [--square] [--seed=1] [--format=jpg|png] [--quality=90]\n");
        return 2;
    }
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

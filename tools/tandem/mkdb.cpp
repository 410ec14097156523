// `tandem mkdb SOURCE DB [options]`: an image folder or list file into an LMDB database of
// Tandem records (docs/data-format.md); `tandem mkdb --check DB` decodes every record of one.
#include <cstdio>

#include "base/error.h"
#include "commands.h"
#include "data/db_builder.h"
#include "progress_line.h"
#include "tool_args.h"

namespace tandem::tool {

const ToolSpec kMkdbSpec{
    "mkdb",
    "SOURCE DB",
    "an image folder or list file into an LMDB database (--check DB verifies one)",
    "SOURCE: an image folder (one sub-folder per class) or a list file of 'path label' lines.\n"
    "DB: the database folder to write (docs/data-format.md). Files that do not decode are skipped\n"
    "and named; a SOURCE where nothing decodes writes nothing.",
    {{"resize", "N", "resize each image's shorter side to N pixels (default 0: keep the size)"},
     {"encoding", "png|jpeg|raw", "how records store pixels (default png)"},
     {"quality", "Q", "JPEG quality 1..100 (default 95)"},
     {"shuffle", nullptr, "store the records in a random order (default: the source's)"},
     {"seed", "S", "the shuffle's seed (default 1)"},
     {"threads", "N", "decode threads (default: the cores, at most 8)"},
     {"channels", "0|1|3",
      "decode to greyscale (1) or colour (3); 0 keeps each file's (default 0)"},
     {"root", "DIR", "a list file's paths are relative to DIR (default: the list's folder)"},
     {"overwrite", nullptr, "replace an existing DB"},
     {"strict", nullptr, "stop at the first file that does not decode instead of skipping it"},
     {"check", "DB", "decode every record of DB and name those that fail (no SOURCE then)"}},
    0,
    2};

int command_mkdb(const Args& args) {
    const ToolArgs a(args, kMkdbSpec);
    const int threads = static_cast<int>(a.integer("threads", default_threads(), 1, 256));
    if (a.has("check")) {
        const std::string db = a.text("check", "");
        ProgressLine bar("check", 1);
        std::int64_t total = 0;
        const auto problems = check_db(db, threads, [&](std::int64_t done, std::int64_t n) {
            if (total == 0) bar = ProgressLine("check", total = n);
            bar.update(done);
        });
        bar.finish();
        for (const auto& p : problems) std::printf("bad record: %s\n", p.c_str());
        std::printf("%s: %lld records, %zu do not decode\n", db.c_str(),
                    static_cast<long long>(total), problems.size());
        return problems.empty() ? 0 : 1;
    }
    if (a.positional().size() != 2)
        throw CommandExit(2, "tandem mkdb: needs SOURCE DB (or --check DB); --help says more");
    DbBuildOptions o;  // every option is read (and checked) before the source is opened
    o.resize = static_cast<int>(a.integer("resize", 0, 0, 1 << 15));
    o.encoding = parse_encoding(a.choice("encoding", "png", {"png", "jpeg", "jpg", "raw"}));
    o.quality = static_cast<int>(a.integer("quality", 95, 1, 100));
    o.shuffle = a.flag("shuffle");
    o.seed = static_cast<std::uint64_t>(a.integer("seed", 1, 0, INT64_MAX));
    o.threads = threads;
    o.channels = static_cast<int>(a.integer("channels", 0, 0, 3));
    if (o.channels == 2) throw CommandExit(2, "tandem mkdb: --channels must be 0, 1 or 3, got 2");
    o.overwrite = a.flag("overwrite");
    o.strict = a.flag("strict");
    const auto source = open_image_source(a.positional()[0], a.text("root", ""));
    std::printf("%s -> %s (%s, %d threads)\n", source->description().c_str(),
                a.positional()[1].c_str(), std::string(encoding_name(o.encoding)).c_str(), threads);
    ProgressLine bar("mkdb", source->size());
    o.progress = [&](std::int64_t done, std::int64_t) { bar.update(done); };
    const DbBuildResult r = build_db(*source, a.positional()[1], o);
    bar.finish();
    for (const auto& s : r.skipped) std::fprintf(stderr, "warning: skipped %s\n", s.c_str());
    std::printf("wrote %lld records to %s (%zu skipped)\n", static_cast<long long>(r.written),
                a.positional()[1].c_str(), r.skipped.size());
    return 0;
}

}  // namespace tandem::tool

// `tandem mkdb SOURCE DB [options]`: an image folder or list file into an LMDB database of
// Tandem records (docs/data-format.md); `tandem mkdb --check DB` decodes every record of one.
#include <cstdio>

#include "base/error.h"
#include "commands.h"
#include "data/db_builder.h"
#include "progress_line.h"
#include "tool_args.h"

namespace tandem::tool {

int command_mkdb(const Args& args) {
    const ToolArgs a(args, "mkdb",
                     {"resize", "encoding", "quality", "shuffle", "seed", "threads", "channels",
                      "root", "overwrite", "strict", "check"});
    const int threads = static_cast<int>(a.integer("threads", default_threads(), 1, 256));
    if (a.has("check")) {
        // "--check DB" or "--check=DB".
        const std::string db = a.text("check", "true") != "true" ? a.text("check", "")
                               : a.positional().empty()          ? ""
                                                                 : a.positional()[0];
        if (db.empty()) {
            std::fprintf(stderr, "usage: tandem mkdb --check DB [--threads=N]\n");
            return 2;
        }
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
    if (a.positional().size() != 2) {
        std::fprintf(stderr,
                     "usage: tandem mkdb SOURCE DB [--resize=N] [--encoding=png|jpeg|raw] "
                     "[--quality=95] [--shuffle] [--seed=1] [--threads=N] [--channels=0|1|3] "
                     "[--root=DIR] [--overwrite] [--strict]\n"
                     "       tandem mkdb --check DB\n"
                     "SOURCE: an image folder (one sub-folder per class) or a list file of "
                     "'path label' lines\n");
        return 2;
    }
    const auto source = open_image_source(a.positional()[0], a.text("root", ""));
    DbBuildOptions o;
    o.resize = static_cast<int>(a.integer("resize", 0, 0, 1 << 15));
    o.encoding = parse_encoding(a.text("encoding", "png"));
    o.quality = static_cast<int>(a.integer("quality", 95, 1, 100));
    o.shuffle = a.flag("shuffle");
    o.seed = static_cast<std::uint64_t>(a.integer("seed", 1, 0, INT64_MAX));
    o.threads = threads;
    o.channels = static_cast<int>(a.integer("channels", 0, 0, 3));
    TANDEM_CHECK_AS(ConfigError, o.channels != 2) << "mkdb: --channels must be 0, 1 or 3";
    o.overwrite = a.flag("overwrite");
    o.strict = a.flag("strict");
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

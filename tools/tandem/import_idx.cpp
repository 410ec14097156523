// `tandem import-idx IMAGES LABELS DB [--encoding=raw] [--overwrite]`: MNIST-style idx files
// (gzipped or not) into an LMDB database of Tandem records, in file order.
#include <cstdio>

#include "commands.h"
#include "data/db_builder.h"
#include "data/idx_source.h"
#include "progress_line.h"
#include "tool_args.h"

namespace tandem::tool {

const ToolSpec kImportIdxSpec{
    "import-idx",
    "IMAGES LABELS DB",
    "MNIST-style idx files into an LMDB database",
    "IMAGES and LABELS: idx files (gzipped or not), such as Debian's dataset-fashion-mnist.\n"
    "DB: the database folder to write, records in file order.",
    {{"encoding", "raw|png", "how records store pixels (default raw)"},
     {"overwrite", nullptr, "replace an existing DB"},
     {"threads", "N", "encode threads (default: the cores, at most 8)"}},
    3,
    3};

int command_import_idx(const Args& args) {
    const ToolArgs a(args, kImportIdxSpec);
    DbBuildOptions o;  // the options are checked before the files are opened
    o.encoding = parse_encoding(a.choice("encoding", "raw", {"raw", "png", "jpeg", "jpg"}));
    o.overwrite = a.flag("overwrite");
    o.threads = static_cast<int>(a.integer("threads", default_threads(), 1, 256));
    const IdxSource source(a.positional()[0], a.positional()[1]);
    std::printf("%s -> %s (%s)\n", source.description().c_str(), a.positional()[2].c_str(),
                std::string(encoding_name(o.encoding)).c_str());
    ProgressLine bar("import-idx", source.size());
    o.progress = [&](std::int64_t done, std::int64_t) { bar.update(done); };
    const DbBuildResult r = build_db(source, a.positional()[2], o);
    bar.finish();
    std::printf("wrote %lld records to %s\n", static_cast<long long>(r.written),
                a.positional()[2].c_str());
    return 0;
}

}  // namespace tandem::tool

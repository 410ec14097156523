// `tandem import-interactions IN.tsv DB [--length=L] [--features=F] [--overwrite]`: users'
// interaction data (docs/data-format.md, "Interaction data") into an LMDB database of
// interaction records, in file order, which T.data.interactions reads.
#include <cstdio>

#include "commands.h"
#include "data/interactions.h"
#include "tool_args.h"

namespace tandem::tool {

const ToolSpec kImportInteractionsSpec{
    "import-interactions",
    "IN.tsv DB",
    "users' interaction data (text) into an LMDB database",
    "IN.tsv: one example a line, tab-separated: user, items (oldest first), index:value\n"
    "features, label (docs/data-format.md). DB: the database folder to write. The whole file is\n"
    "read and checked first: a bad line is named and nothing is written.",
    {{"length", "L", "items a sample keeps: the last L, padded in front (default: the longest)"},
     {"features", "F", "the feature width (default: the largest index + 1)"},
     {"overwrite", nullptr, "replace an existing DB"}},
    2,
    2};

int command_import_interactions(const Args& args) {
    const ToolArgs a(args, kImportInteractionsSpec);
    InteractionShape shape;
    shape.length = a.integer("length", 0, 0, kMaxItemId);
    shape.features = a.integer("features", 0, 0, std::int64_t(1) << 30);
    const bool overwrite = a.flag("overwrite");
    const std::string& in = a.positional()[0];
    const std::string& db = a.positional()[1];
    // Parsed whole before the database is begun: a bad line leaves no database behind.
    const InteractionSet set = layout_interactions(read_interaction_text(in), in, shape);
    write_interaction_db(set, db, overwrite);
    std::printf(
        "wrote %lld examples to %s: %lld items (ids + 1, 0 pads) then %lld features a "
        "sample, %lld item ids, %lld classes\n",
        static_cast<long long>(set.size()), db.c_str(), static_cast<long long>(set.length),
        static_cast<long long>(set.features), static_cast<long long>(set.items),
        static_cast<long long>(set.classes));
    return 0;
}

}  // namespace tandem::tool

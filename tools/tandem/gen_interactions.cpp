// `tandem gen-interactions OUT.tsv [--users=256] [--items=100] [--length=12] [--features=16]
// [--classes=4] [--seed=1] [--overwrite]`: synthetic interaction data
// (core/data/synthetic_interactions.h) to try import-interactions and the compound recipe on.
#include <cstdio>

#include "commands.h"
#include "data/synthetic_interactions.h"
#include "tool_args.h"

namespace tandem::tool {

const ToolSpec kGenInteractionsSpec{
    "gen-interactions",
    "OUT.tsv",
    "write synthetic interaction data (text)",
    "Users whose item sequences and sparse features both tell their class, in the text format\n"
    "of docs/data-format.md, for tests and to try recipes/compound.lua --interactions=.",
    {{"users", "N", "examples, one a user (default 256)"},
     {"items", "N", "item ids 0 .. N-1 (default 100)"},
     {"length", "L", "sequences of 1 .. L items (default 12)"},
     {"features", "F", "feature indices 0 .. F-1 (default 16)"},
     {"classes", "C", "classes (default 4)"},
     {"seed", "S", "the seed (default 1)"},
     {"overwrite", nullptr, "replace an existing OUT.tsv"}},
    1,
    1};

int command_gen_interactions(const Args& args) {
    const ToolArgs a(args, kGenInteractionsSpec);
    SyntheticInteractionOptions o;
    o.users = a.integer("users", 256, 1, std::int64_t(1) << 30);
    o.classes = a.integer("classes", 4, 1, 1 << 20);
    o.items = a.integer("items", 100, 1, std::int64_t(1) << 24);
    if (o.items < o.classes)
        a.mistake("--items (" + std::to_string(o.items) + ") must be at least --classes (" +
                  std::to_string(o.classes) + ")");
    o.length = a.integer("length", 12, 1, 1 << 20);
    o.features = a.integer("features", 16, 1, 1 << 20);
    o.seed = static_cast<std::uint64_t>(a.integer("seed", 1, 0, INT64_MAX));
    write_synthetic_interactions(a.positional()[0], o, a.flag("overwrite"));
    std::printf("wrote %lld users in %lld classes to %s\n", static_cast<long long>(o.users),
                static_cast<long long>(o.classes), a.positional()[0].c_str());
    return 0;
}

}  // namespace tandem::tool

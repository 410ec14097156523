// The parallel options' schema: every option of T.Engine's `parallel` table, once, with its
// kind, default, choices, one line of help, the recipe flag that sets it, whether the MPI ranks
// must agree on it and whether a plan chooses it.
//
// Everything that handles the options loops over this table instead of listing them again:
// the binding's checks (lua/bind_engine.cpp), the recipes' defaults, flags and plan files
// (lua/tandem/parallel.lua, through core.parallel_options()), the MPI ranks' agreement check
// (engine/engine_process.cpp) and the API reference (tests/lua/test_docs.lua holds docs/lua-api.md
// to it). A new option is a field of ParallelOptions and an entry here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "parallel/parallel_options.h"

namespace tandem {

enum class OptionKind {
    count,        // a whole number, at least `minimum`
    flag,         // true or false
    choice,       // one of `choices`
    bytes,        // a size in bytes, at least 1 (the recipe flag takes MB)
    cuts,         // 'auto' or a list of layers (names or 1-based indices) after which a stage ends
    stage_flags,  // a flag for every stage, or one for all
    real,         // a number (not necessarily whole); its range is checked by `set`
    placement     // a list of stages, each a list of layer names (parallel/unit_placement.h)
};

// An option's value: flags, counts, choices, sizes and reals as themselves; `cuts` as 'auto' or
// the 0-based indices where stages 2 .. S begin; `stage_flags` as the list; `placement` as the
// stages' lists of names.
using StageNames = std::vector<std::vector<std::string>>;
using OptionValue = std::variant<bool, std::int64_t, std::string, std::vector<std::size_t>,
                                 std::vector<bool>, double, StageNames>;

struct ParallelOption {
    std::string_view name;  // the key in T.Engine's parallel table
    OptionKind kind;
    std::string_view help;                  // one line
    std::string_view recipe_flag;           // T.parallel's command-line flag (--name), "" for none
    std::vector<std::string_view> choices;  // for `choice`
    std::int64_t minimum = 0;               // for `count`
    bool ranks_agree = false;               // every MPI rank must give the same value
    bool planned = false;                   // the planner chooses it; plan files carry it
    OptionValue (*get)(const ParallelOptions&) = nullptr;
    // Sets the option from a value of its kind; ConfigError naming the option for a bad one.
    void (*set)(ParallelOptions&, const OptionValue&) = nullptr;
};

const std::vector<ParallelOption>& parallel_option_schema();
// The entry called `name`, or null.
const ParallelOption* find_parallel_option(std::string_view name);
// Old names kept for one release, each with its new one: `schedule`, now `pipeline` (T.Engine's
// `schedule` is the learning rate's).
struct RenamedOption {
    std::string_view old_name, new_name;
};
const std::vector<RenamedOption>& renamed_parallel_options();
// The default's value, as text for messages and the API reference ("1", "gpipe", "true").
std::string option_text(const ParallelOption& option, const OptionValue& value);
// A number for comparing an option across MPI ranks: the value (choices by their index), or
// for a list (split's cuts, recompute's flags, a placement) a hash of it.
double option_as_number(const ParallelOption& option, const OptionValue& value);
// Whether the value is a list (its number is a hash, not to be shown).
bool option_is_list(const OptionValue& value);

}  // namespace tandem

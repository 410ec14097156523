// An option set declared once: each option of a constructor's table (T.Engine{...},
// T.data.Loader{...}, T.data.lmdb(path, {...}) and the other data sets, T.devices(kind, n, {...}),
// T.plan.search{...} and the planner's others, T.profile, T.optim.SGD{...}, ...) with its type,
// range or choices, default and one line of help.
//
// The Lua binding checks a table against it in one loop (lua/option_table.h): an unknown key is
// refused with the list of known ones, a wrong type or a value out of range with the option's
// name, what it must be and what it got. The same entries give core.option_schema(name) to Lua
// and the rows of docs/lua-api.md's option tables (tests/lua/test_docs.lua holds the page to
// them). The parallel options have a schema of their own (parallel/parallel_schema.h): theirs
// read and write ParallelOptions and are compared across MPI ranks, which these need not.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tandem {

enum class OptionType {
    integer,   // a whole number in [low, high]
    number,    // a finite number in [low, high]
    flag,      // true or false
    choice,    // one of `choices`
    text,      // any string
    size,      // a size such as '512MB' or a byte count, at least 1
    extent,    // an integer in [low, high], or a pair {height, width} of them
    numbers,   // a finite number, or a list of 1 or 3 of them (one per colour channel)
    integers,  // a list of 1 to kOptionListMost integers, each in [low, high]
    pair,      // a list {a, b} of two finite numbers, each in [low, high]: "a pair of ..."
    object,    // a bound object whose metatable is `object` ("tandem.Layer")
    objects,   // a list of such objects
    table,     // a table of its own options, read by its own schema or code
    function   // a Lua function, for the binding to call (nn.Lua's forward)
};

// A value that is plain data (an extent's or a list's numbers as a vector). As a default:
// monostate where there is none (a required option, an object) or where it is worked out when
// used (`default_note` then says how).
// An integer option's `high` for no upper bound: beyond 2^53 a double (a Lua number) no longer
// holds every whole number.
inline constexpr double kOptionUnbounded = 9007199254740992.0;
// An `integers` option's most entries: a longer list is a mistake (a table of ids, not counts).
inline constexpr std::size_t kOptionListMost = 1024;

using OptionDefault = std::variant<std::monostate, bool, double, std::string, std::vector<double>>;

struct OptionSpec {
    std::string_view name;
    OptionType type;
    std::string_view help;  // one line
    OptionDefault fallback{};
    // How the default reads where it is not the plain value: "none: the machine's memory",
    // "T.devices('cpu', 1)".
    std::string_view default_note{};
    // integer, number, extent, integers (each entry), pair (each entry): the range, both ends
    // included (integer: high kOptionUnbounded for none; number: low -HUGE_VAL, high HUGE_VAL for
    // none)
    double low = 0, high = 0;
    bool above_low = false;   // number, pair: `low` itself excluded ("a finite number > 0")
    bool below_high = false;  // number, pair: `high` itself excluded ("in [0, 1)")
    std::vector<std::string_view> choices{};  // choice
    std::string_view object{};                // object and objects: the metatable's name
    // What the value must be, in words, for object, objects and table ("a loss (nn.MSE(), ...)");
    // the other types' words come from their range or choices.
    std::string_view expected{};
    std::string_view note{};  // added to the words in brackets: "0: every core"
    bool required = false;
    // An integer bounded by another option of the set, checked once that one is known:
    // shard.index is at most shard.count.
    std::string_view at_most{};
};

struct OptionSchema {
    std::string_view name;      // core.option_schema's key: "engine", "loader", "cpu_device"
    std::string_view function;  // the constructor, as messages name it: "T.data.Loader"
    std::vector<OptionSpec> options;

    // The entry called `name`, or null.
    const OptionSpec* find(std::string_view name) const;
    std::vector<std::string> names() const;
};

// What a value of the option must be, as messages and the API reference say it: "an integer in
// [1, 256]", "a non-negative integer", "'drop', 'keep' or 'pad'", "true or false", "a list of
// positive integers", "a pair of finite numbers in [0, 1)".
std::string expected_text(const OptionSpec& option);
// The default as the API reference shows it: "32", "'drop'", "true", "{1, 2, 4}", or the note;
// "none" where there is neither (a required option shows "required").
std::string default_text(const OptionSpec& option);
// Throws ConfigError "<function>: option '<name>' must be <expected>, got <got>".
[[noreturn]] void throw_bad_option(const OptionSchema& schema, const OptionSpec& option,
                                   const std::string& got);

}  // namespace tandem

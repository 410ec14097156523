// An options table read through its schema (base/option_schema.h) in one loop: every key must be
// an option of the schema, every value of the option's type and in its range, and the values are
// then read by name, with the schema's default for those not given. The binding's constructors
// (T.data.Loader and the data sources, T.devices, T.plan's functions, T.profile, the optimizers,
// T.MetricsLog, T.tensor, nn.Lua) and core.check_options (T.Engine's Lua side) use it, so that
// no option is checked by hand and no default is written twice.
#pragma once

#include <lua.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/option_schema.h"

namespace tandem::lua {

class OptionTable {
public:
    // Checks the table at `index` (none or nil: no options) against `schema`; ConfigError
    // "<function>: unknown option 'x' (known: ...)", "<function>: option 'x' must be <what>, got
    // <value>" or "<function>: option 'x' is required: <what>". `prefix` names a nested table's
    // options in messages ("shard." gives 'shard.index'). An `index` that is not a table is a bad
    // argument (ArgError).
    OptionTable(lua_State* L, int index, const OptionSchema& schema, std::string prefix = "");

    bool given(std::string_view name) const;
    // A plain option's value: the one given, or the schema's default.
    std::int64_t integer(std::string_view name) const;
    double number(std::string_view name) const;
    bool flag(std::string_view name) const;
    std::string text(std::string_view name) const;   // text and choice
    std::size_t bytes(std::string_view name) const;  // size; 0 where its default is none
    // extent and numbers: the values given ({x} for one number; an extent's pair as given).
    std::vector<double> numbers(std::string_view name) const;
    // Pushes the option's Lua value as given (nil when it was not): for objects and tables.
    void push(std::string_view name) const;
    // Pushes a table of every option given, plus the default of each plain option not given.
    void push_all() const;

private:
    const OptionDefault& value(std::string_view name) const;
    // Checks the value at `index` as option `o` (its name after `prefix`, its upper bound at
    // most `at_most`).
    OptionDefault check(int index, const OptionSpec& o, const std::string& prefix,
                        std::optional<double> at_most) const;

    lua_State* L_;
    int index_;  // absolute; 0 when there is no table
    const OptionSchema& schema_;
    std::map<std::string, OptionDefault, std::less<>> values_;
};

// Pushes a Lua list of the numbers: an option's list, as given or its default.
void push_numbers(lua_State* L, const std::vector<double>& list);

// Every option set of the binding, listed once here, where every library's schema is seen (no
// library of core/ sees both data/ and engine/): core.option_schema(name) and core.check_options
// find them by name, core.option_schemas() names them for the tests to loop over. A new option
// set is a schema in its library and an entry here (and in tests/core/base/test_option_schema.cpp).
const std::vector<const OptionSchema*>& option_schemas();
// The schema called `name` ("engine", "loader", "loader.shard", "data.lmdb", "devices.cpu", ...),
// or null.
const OptionSchema* find_option_schema(std::string_view name);

}  // namespace tandem::lua

#include "option_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "base/format.h"
#include "check.h"
#include "data/pipeline_schema.h"
#include "data/source_schema.h"
#include "device/device_schema.h"
#include "engine/engine_schema.h"
#include "io/metrics_log_schema.h"
#include "lua_layer.h"
#include "optim/optim_schema.h"
#include "plan/plan_schema.h"
#include "tensor/tensor_schema.h"

namespace tandem::lua {
namespace {

// A number as messages show it: "1.5", "nan" (not printf's "-nan" for 0/0).
std::string shown_number(double x) {
    if (std::isnan(x)) return "nan";
    char text[32];
    std::snprintf(text, sizeof text, "%.14g", x);
    return text;
}

// A value as a message shows what was given: "'x'", "1.5", "table", "tandem.Tensor".
std::string given_text(lua_State* L, int index) {
    if (lua_type(L, index) == LUA_TSTRING) return "'" + std::string(lua_tostring(L, index)) + "'";
    if (lua_type(L, index) != LUA_TNUMBER) return type_name(L, index);
    return shown_number(lua_tonumber(L, index));
}

// Whether `x` is a number option's excluded end: `low` of "> 0", `high` of "in [0, 1)".
bool at_open_end(const OptionSpec& o, double x) {
    return (o.above_low && x == o.low) || (o.below_high && x == o.high);
}

bool is_number_in(lua_State* L, int index, double low, double high, bool whole) {
    if (lua_type(L, index) != LUA_TNUMBER) return false;
    const double x = lua_tonumber(L, index);
    return std::isfinite(x) && x >= low && x <= high && (!whole || x == std::floor(x));
}

// The byte count of a size option at `index`: '512MB' or a whole number of bytes, above 0.
double read_size(lua_State* L, int index, const OptionSchema& schema, const OptionSpec& o,
                 const std::string& name) {
    double bytes = 0;
    if (lua_type(L, index) == LUA_TSTRING) {
        try {
            bytes = static_cast<double>(parse_bytes(lua_tostring(L, index)));
        } catch (const ConfigError& e) {  // "cannot read a size from 'lots' (...)"
            throw ConfigError(std::string(schema.function) + ": option '" + name +
                              "': " + e.what());
        }
    } else if (is_number_in(L, index, 1, 1e18, true)) {
        bytes = lua_tonumber(L, index);
    }
    // '0B' is no cap at all, and a fraction of a byte no size: say so rather than run without one.
    if (bytes < 1) throw_bad_option(schema, o, given_text(L, index));
    return bytes;
}

// "a list whose entry 2 is 'cpu'" for the first entry of the list at `index` that is not an
// object of metatable `type`; "" when every entry is one.
std::string stray_entry(lua_State* L, int index, const std::string& type) {
    for (int i = 1; i <= static_cast<int>(lua_objlen(L, index)); ++i) {
        lua_rawgeti(L, index, i);
        const bool ok = luaL_testudata(L, -1, type.c_str()) != nullptr;
        const std::string got = ok ? "" : given_text(L, -1);
        lua_pop(L, 1);
        if (!ok) return "a list whose entry " + std::to_string(i) + " is " + got;
    }
    return "";
}

// The numbers of the list at `index` when it is a table of 1 to `most` entries under the keys
// 1, 2, ..., each a number in [low, high] (a whole one when `whole`); nullopt otherwise, with
// what it was in `why` ("a list of 4 entries", "a list whose entry 2 is inf").
std::optional<std::vector<double>> number_list(lua_State* L, int index, std::size_t most,
                                               double low, double high, bool whole,
                                               std::string& why) {
    if (!lua_istable(L, index)) return std::nullopt;
    const std::size_t length = lua_objlen(L, index);
    std::size_t keys = 0;
    lua_pushnil(L);
    while (lua_next(L, index) != 0) lua_pop(L, 1), ++keys;
    if (keys != length) {  // {1, 2, x = 3}: no list
        why = "a table with keys other than 1 to " + std::to_string(length);
        return std::nullopt;
    }
    if (length == 0 || length > most) {
        why = "a list of " + std::to_string(length) + " entries";
        return std::nullopt;
    }
    std::vector<double> values;
    for (std::size_t i = 1; i <= length; ++i) {
        lua_rawgeti(L, index, static_cast<int>(i));
        const bool ok = is_number_in(L, -1, low, high, whole);
        if (!ok) why = "a list whose entry " + std::to_string(i) + " is " + given_text(L, -1);
        values.push_back(lua_tonumber(L, -1));
        lua_pop(L, 1);
        if (!ok) return std::nullopt;
    }
    return values;
}

// Checks the value at `index` against option `o`; its plain value (monostate for objects and
// tables, which stay in the Lua table).
OptionDefault check_value(lua_State* L, int index, const OptionSchema& schema, const OptionSpec& o,
                          const std::string& name) {
    const auto bad = [&] { throw_bad_option(schema, o, given_text(L, index)); };
    switch (o.type) {
        case OptionType::integer:
        case OptionType::number:
            if (!is_number_in(L, index, o.low, o.high, o.type == OptionType::integer) ||
                at_open_end(o, lua_tonumber(L, index)))
                bad();
            return lua_tonumber(L, index);
        case OptionType::flag:
            if (lua_type(L, index) != LUA_TBOOLEAN) bad();
            return lua_toboolean(L, index) != 0;
        case OptionType::choice: {
            if (lua_type(L, index) != LUA_TSTRING) bad();
            const std::string text = lua_tostring(L, index);
            for (const auto& choice : o.choices)
                if (choice == text) return text;
            bad();
            return {};
        }
        case OptionType::text:
            if (lua_type(L, index) != LUA_TSTRING) bad();
            return std::string(lua_tostring(L, index));
        case OptionType::size: return read_size(L, index, schema, o, name);
        case OptionType::extent:
        case OptionType::numbers: {
            const bool extent = o.type == OptionType::extent;
            const double low = extent ? o.low : -HUGE_VAL, high = extent ? o.high : HUGE_VAL;
            if (lua_type(L, index) == LUA_TNUMBER) {
                if (!is_number_in(L, index, low, high, extent)) bad();
                return std::vector<double>{lua_tonumber(L, index)};
            }
            std::string why = given_text(L, index);
            const auto list = number_list(L, index, extent ? 2 : 3, low, high, extent, why);
            // An extent is a pair; a list of numbers one value for all channels or one for each.
            const bool fits =
                list && (extent ? list->size() == 2 : list->size() == 1 || list->size() == 3);
            if (!fits) {
                if (list) why = "a list of " + std::to_string(list->size()) + " entries";
                throw_bad_option(schema, o, why);
            }
            return *list;
        }
        case OptionType::integers:
        case OptionType::pair: {
            const bool pair = o.type == OptionType::pair;
            std::string why = given_text(L, index);
            const auto list =
                number_list(L, index, pair ? 2 : kOptionListMost, o.low, o.high, !pair, why);
            if (list && pair && list->size() != 2)
                why = "a list of " + std::to_string(list->size()) + " entries";
            if (!list || (pair && list->size() != 2)) throw_bad_option(schema, o, why);
            for (std::size_t i = 0; i < list->size(); ++i)
                if (at_open_end(o, (*list)[i]))
                    throw_bad_option(schema, o,
                                     "a list whose entry " + std::to_string(i + 1) + " is " +
                                         shown_number((*list)[i]));
            return *list;
        }
        case OptionType::object:
            if (luaL_testudata(L, index, std::string(o.object).c_str()) == nullptr) bad();
            return {};
        case OptionType::objects: {
            // A plain table: a userdata or a table with a metatable is no list of ours.
            if (!lua_istable(L, index) || lua_getmetatable(L, index) != 0) {
                if (lua_istable(L, index)) lua_pop(L, 1);
                bad();
            }
            const std::string stray = stray_entry(L, index, std::string(o.object));
            if (!stray.empty()) throw_bad_option(schema, o, stray);
            return {};
        }
        case OptionType::table:
            if (!lua_istable(L, index)) bad();
            return {};
        case OptionType::function:
            if (!lua_isfunction(L, index)) bad();
            return {};
    }
    return {};
}

}  // namespace

void push_numbers(lua_State* L, const std::vector<double>& list) {
    lua_createtable(L, static_cast<int>(list.size()), 0);
    for (std::size_t i = 0; i < list.size(); ++i) {
        lua_pushnumber(L, list[i]);
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
}

OptionTable::OptionTable(lua_State* L, int index, const OptionSchema& schema, std::string prefix)
    : L_(L), index_(lua_isnoneornil(L, index) ? 0
                    : index > 0               ? index
                                              : lua_gettop(L) + index + 1),
      schema_(schema) {
    if (index_ != 0 && !lua_istable(L, index_))
        throw ArgError(index, "options table expected, got " + type_name(L, index_));
    const std::string function(schema.function);
    if (index_ != 0) {
        lua_pushnil(L);
        while (lua_next(L, index_) != 0) {
            const bool named = lua_type(L, -2) == LUA_TSTRING;
            const OptionSpec* o = named ? schema.find(lua_tostring(L, -2)) : nullptr;
            if (o == nullptr) {
                const std::string key =
                    named ? std::string(lua_tostring(L, -2)) : "[" + given_text(L, -2) + "]";
                std::string known;
                for (const auto& option : schema.options)
                    known += (known.empty() ? "" : ", ") + prefix + std::string(option.name);
                lua_pop(L, 2);
                throw ConfigError(function + ": unknown option '" + prefix + key + "' (" +
                                  (known.empty() ? "it takes no options" : "known: " + known) +
                                  ")");
            }
            if (o->at_most.empty())
                values_[std::string(o->name)] = check(lua_gettop(L), *o, prefix, {});
            lua_pop(L, 1);
        }
    }
    for (const auto& o : schema.options) {
        if (given(o.name)) continue;
        if (o.required)
            throw ConfigError(function + ": option '" + prefix + std::string(o.name) +
                              "' is required: " + expected_text(o));
        values_[std::string(o.name)] = o.fallback;
    }
    // Last, the options bounded by another, now known: "shard.index must be an integer in [1, 3]".
    for (const auto& o : schema.options) {
        if (o.at_most.empty() || !given(o.name)) continue;
        push(o.name);
        values_[std::string(o.name)] = check(lua_gettop(L), o, prefix, number(o.at_most));
        lua_pop(L, 1);
    }
}

OptionDefault OptionTable::check(int index, const OptionSpec& o, const std::string& prefix,
                                 std::optional<double> at_most) const {
    // The option's name in messages is the nested one ('shard.index'), its bound the other's.
    OptionSpec spec = o;
    const std::string name = prefix + std::string(o.name);
    spec.name = name;
    if (at_most) spec.high = std::min(spec.high, *at_most), spec.note = {};
    return check_value(L_, index, schema_, spec, name);
}

bool OptionTable::given(std::string_view name) const {
    if (index_ == 0) return false;
    lua_getfield(L_, index_, std::string(name).c_str());
    const bool present = !lua_isnil(L_, -1);
    lua_pop(L_, 1);
    return present;
}

const OptionDefault& OptionTable::value(std::string_view name) const {
    const auto it = values_.find(name);
    // A name outside the schema is the binding's mistake, not the user's.
    TANDEM_CHECK(it != values_.end()) << schema_.function << " has no option '" << name << "'";
    return it->second;
}

double OptionTable::number(std::string_view name) const {
    const auto* x = std::get_if<double>(&value(name));
    TANDEM_CHECK(x != nullptr) << schema_.function << ": option '" << name << "' has no number";
    return *x;
}

std::int64_t OptionTable::integer(std::string_view name) const {
    return static_cast<std::int64_t>(number(name));
}

std::size_t OptionTable::bytes(std::string_view name) const {
    return static_cast<std::size_t>(number(name));
}

bool OptionTable::flag(std::string_view name) const {
    const auto* b = std::get_if<bool>(&value(name));
    TANDEM_CHECK(b != nullptr) << schema_.function << ": option '" << name << "' is no flag";
    return *b;
}

std::vector<double> OptionTable::numbers(std::string_view name) const {
    const OptionDefault& v = value(name);
    if (const auto* x = std::get_if<double>(&v)) return {*x};  // a default of one value
    const auto* list = std::get_if<std::vector<double>>(&v);
    TANDEM_CHECK(list != nullptr) << schema_.function << ": option '" << name << "' has no list";
    return *list;
}

std::string OptionTable::text(std::string_view name) const {
    const auto* s = std::get_if<std::string>(&value(name));
    TANDEM_CHECK(s != nullptr) << schema_.function << ": option '" << name << "' is no text";
    return *s;
}

void OptionTable::push(std::string_view name) const {
    if (index_ == 0) {
        lua_pushnil(L_);
        return;
    }
    lua_getfield(L_, index_, std::string(name).c_str());
}

void OptionTable::push_all() const {
    lua_createtable(L_, 0, static_cast<int>(schema_.options.size()));
    for (const auto& o : schema_.options) {
        const OptionDefault& v = values_.at(std::string(o.name));
        if (const auto* b = std::get_if<bool>(&v))
            lua_pushboolean(L_, *b);
        else if (const auto* x = std::get_if<double>(&v))
            lua_pushnumber(L_, *x);
        else if (const auto* s = std::get_if<std::string>(&v))
            lua_pushlstring(L_, s->data(), s->size());
        else if (const auto* list = std::get_if<std::vector<double>>(&v); list && !given(o.name))
            push_numbers(L_, *list);  // a list's default
        else
            push(o.name);  // a list, an object or a table, as given (nil when not)
        lua_setfield(L_, -2, std::string(o.name).c_str());
    }
}

const std::vector<const OptionSchema*>& option_schemas() {
    static const std::vector<const OptionSchema*> schemas{
        &engine_option_schema(),       &loader_option_schema(),
        &loader_shard_option_schema(), &loader_transform_option_schema(),
        &folder_option_schema(),       &lmdb_option_schema(),
        &list_option_schema(),         &mnist_option_schema(),
        &interactions_option_schema(), &interactions_info_option_schema(),
        &augment_option_schema(),      &cpu_device_option_schema(),
        &cuda_device_option_schema(),  &plan_costs_option_schema(),
        &plan_search_option_schema(),  &plan_simulate_option_schema(),
        &plan_table_option_schema(),   &plan_layers_option_schema(),
        &profile_option_schema(),      &sgd_option_schema(),
        &adam_option_schema(),         &adamw_option_schema(),
        &metrics_log_option_schema(),  &tensor_option_schema(),
        &lua_layer_option_schema(),
    };
    return schemas;
}

const OptionSchema* find_option_schema(std::string_view name) {
    for (const OptionSchema* schema : option_schemas())
        if (schema->name == name) return schema;
    return nullptr;
}

}  // namespace tandem::lua

// The parallel options in Lua, read through their schema (core/parallel/parallel_schema.h):
// T.Engine's parallel table checked option by option, and core.parallel_options(), the schema
// as a Lua list, from which lua/tandem/parallel.lua makes the recipes' flags and defaults.
#include "bind_parallel.h"

#include <cmath>
#include <cstdio>
#include <mutex>

#include "binding.h"
#include "check.h"
#include "parallel/parallel_schema.h"
#include "plan/partitioner.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

std::string_view kind_name(OptionKind kind) {
    switch (kind) {
        case OptionKind::count: return "count";
        case OptionKind::flag: return "flag";
        case OptionKind::choice: return "choice";
        case OptionKind::bytes: return "bytes";
        case OptionKind::cuts: return "cuts";
        case OptionKind::stage_flags: return "stage_flags";
        case OptionKind::real: return "real";
        case OptionKind::placement: return "placement";
    }
    return "?";
}

// Says once per process that an option was renamed (the old name keeps working this release).
void warn_renamed(std::string_view old_name, std::string_view new_name) {
    static std::once_flag said;
    std::call_once(said, [&] {
        std::fprintf(
            stderr,
            "warning: T.Engine's parallel.%.*s is now parallel.%.*s (T.Engine's schedule is the "
            "learning-rate schedule); the old name goes in the next release\n",
            static_cast<int>(old_name.size()), old_name.data(), static_cast<int>(new_name.size()),
            new_name.data());
    });
}

// The value of `option` under `key` in the table at `index` (present), as the schema takes it.
OptionValue read_value(lua_State* L, int index, const char* key, const ParallelOption& option,
                       const Sequential& net, int stages) {
    const std::string what = std::string("parallel.") + key;
    switch (option.kind) {
        case OptionKind::count: return option_int(L, index, key, 0);
        case OptionKind::flag: return option_bool(L, index, key, false);
        case OptionKind::choice: return option_string(L, index, key, "");
        case OptionKind::real:
            return option_number(L, index, key, 0);  // the schema checks the range
        case OptionKind::bytes: {
            const double bytes = option_number(L, index, key, 0);
            // A fraction of a byte, inf or a negative count is a mistake, not a size (issue 19).
            if (!(bytes >= 1 && bytes < 1e18 && bytes == std::floor(bytes))) {
                char text[32];
                std::snprintf(text, sizeof text, "%.17g", bytes);
                throw ConfigError("T.Engine: " + what +
                                  " must be at least 1 and a whole number of bytes, got " + text);
            }
            return static_cast<std::int64_t>(bytes);
        }
        case OptionKind::stage_flags: {
            lua_getfield(L, index, key);
            OptionValue value;
            if (lua_isboolean(L, -1)) {
                value = static_cast<bool>(lua_toboolean(L, -1));
            } else if (lua_istable(L, -1)) {
                std::vector<bool> flags;
                for (int i = 1; i <= static_cast<int>(lua_objlen(L, -1)); ++i) {
                    lua_rawgeti(L, -1, i);
                    if (!lua_isboolean(L, -1))  // {1, 2} read as {true, true} before (issue 19)
                        throw ConfigError("T.Engine: " + what + " entry " + std::to_string(i) +
                                          " is " + number_or_type(L, -1) +
                                          "; give true or false for each stage");
                    flags.push_back(lua_toboolean(L, -1));
                    lua_pop(L, 1);
                }
                value = std::move(flags);
            } else {
                throw ConfigError("T.Engine: " + what +
                                  " must be a boolean or a list of booleans, one per stage, got " +
                                  number_or_type(L, -1));
            }
            lua_pop(L, 1);
            return value;
        }
        case OptionKind::placement: return read_placement(L, index, key, "T.Engine: " + what);
        case OptionKind::cuts: {
            lua_getfield(L, index, key);
            const int split = lua_gettop(L);
            if (lua_type(L, split) == LUA_TSTRING &&
                std::string(lua_tostring(L, split)) == "auto") {
                lua_pop(L, 1);
                return std::string("auto");
            }
            if (!lua_istable(L, split))
                throw ArgError(index, what + " must be 'auto' or a list of layer names or indices");
            std::vector<std::string> known;
            for (const auto& layer : net.layers()) known.push_back(layer->name());
            std::vector<CutSpec> specs;
            for (int i = 1; i <= static_cast<int>(lua_objlen(L, split)); ++i) {
                lua_rawgeti(L, split, i);
                if (lua_type(L, -1) == LUA_TNUMBER)
                    specs.emplace_back(check_int(L, lua_gettop(L)));
                else
                    specs.emplace_back(check_string(L, lua_gettop(L)));
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
            return parse_cuts(specs, known, stages);
        }
    }
    return false;
}

void push_value(lua_State* L, const OptionValue& value) {
    std::visit(
        [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>) {
                lua_pushboolean(L, v);
            } else if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, double>) {
                lua_pushnumber(L, static_cast<lua_Number>(v));
            } else if constexpr (std::is_same_v<T, std::string>) {
                lua_pushlstring(L, v.data(), v.size());
            } else if constexpr (std::is_same_v<T, StageNames>) {
                lua_createtable(L, static_cast<int>(v.size()), 0);
                for (std::size_t s = 0; s < v.size(); ++s) {
                    lua_createtable(L, static_cast<int>(v[s].size()), 0);
                    for (std::size_t i = 0; i < v[s].size(); ++i) {
                        lua_pushlstring(L, v[s][i].data(), v[s][i].size());
                        lua_rawseti(L, -2, static_cast<int>(i + 1));
                    }
                    lua_rawseti(L, -2, static_cast<int>(s + 1));
                }
            } else {
                lua_createtable(L, static_cast<int>(v.size()), 0);
                for (std::size_t i = 0; i < v.size(); ++i) {
                    if constexpr (std::is_same_v<T, std::vector<bool>>)
                        lua_pushboolean(L, v[i]);
                    else
                        lua_pushnumber(L, static_cast<lua_Number>(v[i] + 1));  // as Lua counts
                    lua_rawseti(L, -2, static_cast<int>(i + 1));
                }
            }
        },
        value);
}

// core.parallel_options() -> {{name, kind, help, flag, choices, default, default_text, planned,
// ranks_agree, minimum}, ...} in the schema's order.
int parallel_options(lua_State* L) {
    const ParallelOptions defaults;
    const auto& schema = parallel_option_schema();
    lua_createtable(L, static_cast<int>(schema.size()), 0);
    for (std::size_t i = 0; i < schema.size(); ++i) {
        const ParallelOption& o = schema[i];
        lua_createtable(L, 0, 10);
        set_string(L, "name", std::string(o.name));
        set_string(L, "kind", std::string(kind_name(o.kind)));
        set_string(L, "help", std::string(o.help));
        set_string(L, "flag", std::string(o.recipe_flag));
        lua_createtable(L, static_cast<int>(o.choices.size()), 0);
        for (std::size_t c = 0; c < o.choices.size(); ++c) {
            lua_pushlstring(L, o.choices[c].data(), o.choices[c].size());
            lua_rawseti(L, -2, static_cast<int>(c + 1));
        }
        lua_setfield(L, -2, "choices");
        push_value(L, o.get(defaults));
        lua_setfield(L, -2, "default");
        set_string(L, "default_text", option_text(o, o.get(defaults)));
        lua_pushboolean(L, o.planned);
        lua_setfield(L, -2, "planned");
        lua_pushboolean(L, o.ranks_agree);
        lua_setfield(L, -2, "ranks_agree");
        set_number(L, "minimum", static_cast<double>(o.minimum));
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    return 1;
}

const luaL_Reg kParallelFunctions[] = {
    {"parallel_options", wrap<parallel_options>},
    {nullptr, nullptr},
};

}  // namespace

StageNames read_placement(lua_State* L, int index, const char* key, const std::string& what) {
    lua_getfield(L, index, key);
    const int list = lua_gettop(L);
    const std::string form =
        " must be a list of stages, each a list of layer names such as {{'fc1', 'g.a'}, {'g.b'}}";
    if (!lua_istable(L, list)) throw ConfigError(what + form + ", got " + number_or_type(L, list));
    StageNames stages;
    for (int s = 1; s <= static_cast<int>(lua_objlen(L, list)); ++s) {
        lua_rawgeti(L, list, s);
        if (!lua_istable(L, -1))
            throw ConfigError(what + form + "; stage " + std::to_string(s) + " is " +
                              number_or_type(L, -1));
        auto& names = stages.emplace_back();
        for (int i = 1; i <= static_cast<int>(lua_objlen(L, -1)); ++i) {
            lua_rawgeti(L, -1, i);
            if (lua_type(L, -1) != LUA_TSTRING)
                throw ConfigError(what + " stage " + std::to_string(s) + " entry " +
                                  std::to_string(i) + " is " + number_or_type(L, -1) +
                                  "; give layer names");
            names.emplace_back(lua_tostring(L, -1));
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return stages;
}

ParallelOptions check_parallel(lua_State* L, int index, const Sequential& net) {
    const auto& schema = parallel_option_schema();
    std::vector<std::string> known;
    for (const auto& option : schema) known.emplace_back(option.name);
    for (const auto& renamed : renamed_parallel_options()) known.emplace_back(renamed.old_name);
    check_options(L, index, "T.Engine parallel", known);
    ParallelOptions p;
    for (const auto& option : schema) {
        std::string key(option.name);
        for (const auto& renamed : renamed_parallel_options()) {
            const std::string old(renamed.old_name);
            if (renamed.new_name != option.name || !has_option(L, index, old.c_str())) continue;
            if (has_option(L, index, key.c_str()))
                throw ConfigError("T.Engine parallel: give " + key + " or its old name " + old +
                                  ", not both");
            warn_renamed(renamed.old_name, renamed.new_name);
            key = old;
        }
        if (!has_option(L, index, key.c_str())) continue;
        option.set(p, read_value(L, index, key.c_str(), option, net, p.stages));
    }
    return p;
}

void register_parallel(lua_State* L, int module) {
    add_functions(L, module, kParallelFunctions);
}

}  // namespace tandem::lua

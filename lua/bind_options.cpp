// The option schemas in Lua (base/option_schema.h): core.option_schema(name), each option of a
// constructor's table as a row, for the API reference's test and anything that lists them
// (core.option_schemas() names them); and core.check_options(name, table), the binding's one
// check of such a table, for the constructors written in Lua (T.Engine).
#include "binding.h"
#include "check.h"
#include "option_table.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

std::string_view type_word(OptionType type) {
    switch (type) {
        case OptionType::integer: return "integer";
        case OptionType::number: return "number";
        case OptionType::flag: return "flag";
        case OptionType::choice: return "choice";
        case OptionType::text: return "text";
        case OptionType::size: return "size";
        case OptionType::extent: return "extent";
        case OptionType::numbers: return "numbers";
        case OptionType::integers: return "integers";
        case OptionType::pair: return "pair";
        case OptionType::object: return "object";
        case OptionType::objects: return "objects";
        case OptionType::table: return "table";
        case OptionType::function: return "function";
    }
    return "?";
}

const OptionSchema& check_schema(lua_State* L, int index) {
    const std::string name = check_string(L, index);
    const OptionSchema* schema = find_option_schema(name);
    if (schema == nullptr) {
        std::string known;
        for (const OptionSchema* s : option_schemas())
            known += (known.empty() ? "" : ", ") + std::string(s->name);
        throw ArgError(index, "unknown option schema '" + name + "' (known: " + known + ")");
    }
    return *schema;
}

void push_default(lua_State* L, const OptionDefault& value) {
    if (const auto* b = std::get_if<bool>(&value))
        lua_pushboolean(L, *b);
    else if (const auto* x = std::get_if<double>(&value))
        lua_pushnumber(L, *x);
    else if (const auto* s = std::get_if<std::string>(&value))
        lua_pushlstring(L, s->data(), s->size());
    else if (const auto* list = std::get_if<std::vector<double>>(&value))
        push_numbers(L, *list);
    else
        lua_pushnil(L);
}

// core.option_schema(name) -> {{name, type, help, default, default_text, expected, low, high,
// choices, object, required}, ...} in the schema's order (default: nil where it is not a plain
// value; default_text says it), and the function the options are given to ('T.data.Loader').
int option_schema(lua_State* L) {
    const OptionSchema& schema = check_schema(L, 1);
    lua_createtable(L, static_cast<int>(schema.options.size()), 0);
    for (std::size_t i = 0; i < schema.options.size(); ++i) {
        const OptionSpec& o = schema.options[i];
        lua_createtable(L, 0, 11);
        set_string(L, "name", std::string(o.name));
        set_string(L, "type", std::string(type_word(o.type)));
        set_string(L, "help", std::string(o.help));
        // A default worked out when used (default_note) has no plain value to show.
        if (o.default_note.empty())
            push_default(L, o.fallback);
        else
            lua_pushnil(L);
        lua_setfield(L, -2, "default");
        set_string(L, "default_text", default_text(o));
        set_string(L, "expected", expected_text(o));
        if (o.type == OptionType::integer || o.type == OptionType::number) {
            set_number(L, "low", o.low);
            set_number(L, "high", o.high);
        }
        lua_createtable(L, static_cast<int>(o.choices.size()), 0);
        for (std::size_t c = 0; c < o.choices.size(); ++c) {
            lua_pushlstring(L, o.choices[c].data(), o.choices[c].size());
            lua_rawseti(L, -2, static_cast<int>(c + 1));
        }
        lua_setfield(L, -2, "choices");
        if (!o.object.empty()) set_string(L, "object", std::string(o.object));
        lua_pushboolean(L, o.required);
        lua_setfield(L, -2, "required");
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    lua_pushstring(L, std::string(schema.function).c_str());
    return 2;
}

// core.option_schemas() -> {'engine', 'loader', ...}: the name of every schema, for
// core.option_schema.
int option_schema_names(lua_State* L) {
    const auto& schemas = option_schemas();
    lua_createtable(L, static_cast<int>(schemas.size()), 0);
    for (std::size_t i = 0; i < schemas.size(); ++i) {
        lua_pushlstring(L, schemas[i]->name.data(), schemas[i]->name.size());
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    return 1;
}

// core.check_options(name, options) -> the options checked against the schema `name`, with the
// default of every plain option not given; ConfigError naming the schema's function otherwise.
int check_options_table(lua_State* L) {
    const OptionSchema& schema = check_schema(L, 1);
    if (!lua_isnoneornil(L, 2) && !lua_istable(L, 2))
        throw ConfigError(std::string(schema.function) + ": options table expected, got " +
                          type_name(L, 2));
    OptionTable(L, 2, schema).push_all();
    return 1;
}

const luaL_Reg kOptionFunctions[] = {
    {"option_schema", wrap<option_schema>},
    {"option_schemas", wrap<option_schema_names>},
    {"check_options", wrap<check_options_table>},
    {nullptr, nullptr},
};

}  // namespace

void register_options(lua_State* L, int module) {
    add_functions(L, module, kOptionFunctions);
}

}  // namespace tandem::lua

#include "check.h"

#include <cmath>
#include <filesystem>
#include <vector>

#include "base/error.h"
#include "base/format.h"

namespace tandem::lua {
namespace {

std::string number_text(double value) {
    lua_Number n = value;
    char text[64];
    std::snprintf(text, sizeof text, LUA_NUMBER_FMT, n);
    return text;
}

// "integer expected, got 2.5" / "integer expected, got string".
std::string got(lua_State* L, int index) {
    if (lua_type(L, index) == LUA_TNUMBER) return number_text(lua_tonumber(L, index));
    return type_name(L, index);
}

// 'text', built by appending (GCC 12 warns falsely on "'" + std::string + "'").
std::string quoted(const char* text) {
    std::string out(1, '\'');
    out.append(text);
    out.push_back('\'');
    return out;
}

bool is_integral(double value) {
    return std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 9.0e15;
}

// Pushes options[key] (nil when there is no options table).
void push_option(lua_State* L, int index, const char* key) {
    if (lua_istable(L, index))
        lua_getfield(L, index, key);
    else
        lua_pushnil(L);
}

// Reads the option on the top of the stack through `read`, pops it, and words a failure as
// "option 'key' must be ...".
template <class T, class Read>
T read_option(lua_State* L, int index, const char* key, T fallback, const char* expected,
              Read read) {
    push_option(L, index, key);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return fallback;
    }
    std::optional<T> value = read(L);
    if (!value) {
        // The value itself when it is text: "option 'mode' must be a string, got 'fast'".
        const std::string value =
            lua_type(L, -1) == LUA_TSTRING ? quoted(lua_tostring(L, -1)) : got(L, -1);
        std::string message =
            std::string("option '") + key + "' must be " + expected + ", got " + value;
        lua_pop(L, 1);
        throw ArgError(index, message);
    }
    lua_pop(L, 1);
    return *value;
}

}  // namespace

std::string type_name(lua_State* L, int index) {
    if (lua_type(L, index) == LUA_TUSERDATA && lua_getmetatable(L, index)) {
        lua_getfield(L, -1, "__name");
        std::string name = lua_isstring(L, -1) ? lua_tostring(L, -1) : "userdata";
        lua_pop(L, 2);
        return name;
    }
    return luaL_typename(L, index);
}

std::string number_or_type(lua_State* L, int index) {
    return got(L, index);
}

bool is_type(lua_State* L, int index, const char* type) {
    return luaL_testudata(L, index, type) != nullptr;
}

double check_number(lua_State* L, int index) {
    if (lua_type(L, index) != LUA_TNUMBER)
        throw ArgError(index, "number expected, got " + type_name(L, index));
    return lua_tonumber(L, index);
}

std::int64_t check_int(lua_State* L, int index) {
    if (lua_type(L, index) != LUA_TNUMBER || !is_integral(lua_tonumber(L, index)))
        throw ArgError(index, "integer expected, got " + got(L, index));
    return static_cast<std::int64_t>(lua_tonumber(L, index));
}

bool check_bool(lua_State* L, int index) {
    if (lua_type(L, index) != LUA_TBOOLEAN)
        throw ArgError(index, "boolean expected, got " + type_name(L, index));
    return lua_toboolean(L, index) != 0;
}

std::string check_string(lua_State* L, int index) {
    if (lua_type(L, index) != LUA_TSTRING)
        throw ArgError(index, "string expected, got " + type_name(L, index));
    std::size_t size = 0;
    const char* text = lua_tolstring(L, index, &size);
    return std::string(text, size);
}

double opt_number(lua_State* L, int index, double fallback) {
    return lua_isnoneornil(L, index) ? fallback : check_number(L, index);
}

std::int64_t opt_int(lua_State* L, int index, std::int64_t fallback) {
    return lua_isnoneornil(L, index) ? fallback : check_int(L, index);
}

bool opt_bool(lua_State* L, int index, bool fallback) {
    return lua_isnoneornil(L, index) ? fallback : check_bool(L, index);
}

std::string opt_string(lua_State* L, int index, const std::string& fallback) {
    return lua_isnoneornil(L, index) ? fallback : check_string(L, index);
}

std::int64_t check_int_in(lua_State* L, int index, std::int64_t low, std::int64_t high,
                          const char* what) {
    // A fraction or a string is named with the argument too: "device count must be an
    // integer in [1, 256], got 1.5", not a bare "integer expected" (issue 19).
    if (lua_type(L, index) != LUA_TNUMBER || !is_integral(lua_tonumber(L, index)))
        throw ArgError(index, std::string(what) + " must be an integer in [" + std::to_string(low) +
                                  ", " + std::to_string(high) + "], got " + got(L, index));
    const std::int64_t value = check_int(L, index);
    if (value < low || value > high)
        throw ArgError(index, std::string(what) + " must be in [" + std::to_string(low) + ", " +
                                  std::to_string(high) + "], got " + std::to_string(value));
    return value;
}

Shape check_shape(lua_State* L, int index) {
    if (!lua_istable(L, index))
        throw ArgError(index, "shape expected (a list of sizes such as {8, 3, 32, 32}), got " +
                                  type_name(L, index));
    const int rank = static_cast<int>(lua_objlen(L, index));
    std::vector<std::int64_t> dims;
    for (int i = 1; i <= rank; ++i) {
        lua_rawgeti(L, index, i);
        const bool ok = lua_type(L, -1) == LUA_TNUMBER && is_integral(lua_tonumber(L, -1)) &&
                        lua_tonumber(L, -1) >= 0;
        if (!ok) {
            std::string message = "shape entry " + std::to_string(i) +
                                  " must be a non-negative integer, got " + got(L, -1);
            lua_pop(L, 1);
            throw ArgError(index, message);
        }
        dims.push_back(static_cast<std::int64_t>(lua_tonumber(L, -1)));
        lua_pop(L, 1);
    }
    double elements = 1;
    for (auto d : dims) elements *= static_cast<double>(d);
    if (elements > 1e15)  // the core's element counts would overflow well before memory runs out
        throw ArgError(index, "shape " + Shape(dims).to_string() + " has too many elements");
    // Keys beyond the list ({8, 3, n = 2}) would be ignored silently: refuse them.
    lua_pushnil(L);
    while (lua_next(L, index) != 0) {
        const bool in_list = lua_type(L, -2) == LUA_TNUMBER && is_integral(lua_tonumber(L, -2)) &&
                             lua_tonumber(L, -2) >= 1 && lua_tonumber(L, -2) <= rank;
        lua_pop(L, 1);
        if (!in_list) {
            lua_pop(L, 1);
            throw ArgError(index, "shape must be a plain list of sizes (it has other keys)");
        }
    }
    return Shape(std::move(dims));
}

void push_shape(lua_State* L, const Shape& shape) {
    lua_createtable(L, shape.rank(), 0);
    for (int i = 0; i < shape.rank(); ++i) {
        lua_pushnumber(L, static_cast<lua_Number>(shape[i]));
        lua_rawseti(L, -2, i + 1);
    }
}

void check_options(lua_State* L, int index, const char* function,
                   std::initializer_list<const char*> known) {
    check_options(L, index, function, std::vector<std::string>(known.begin(), known.end()));
}

void check_options(lua_State* L, int index, const char* function,
                   const std::vector<std::string>& names) {
    if (lua_isnoneornil(L, index)) return;
    if (!lua_istable(L, index))
        throw ArgError(index, "options table expected, got " + type_name(L, index));
    lua_pushnil(L);
    while (lua_next(L, index) != 0) {
        lua_pop(L, 1);
        // [key]: lua_tostring only on string keys, so lua_next is not confused.
        const bool is_string = lua_type(L, -1) == LUA_TSTRING;
        std::string key = is_string ? lua_tostring(L, -1) : got(L, -1);
        bool found = false;
        for (const auto& name : names) found = found || (is_string && name == key);
        if (!found) {
            if (!is_string) key = "[" + key + "]";
            lua_pop(L, 1);
            TANDEM_THROW(ConfigError)
                << function << ": unknown option '" << key << "' ("
                << (names.empty() ? "it takes no options" : "known: " + join(names, ", ")) << ")";
        }
    }
}

bool has_option(lua_State* L, int index, const char* key) {
    push_option(L, index, key);
    const bool present = !lua_isnil(L, -1);
    lua_pop(L, 1);
    return present;
}

double option_number(lua_State* L, int index, const char* key, double fallback) {
    return read_option<double>(L, index, key, fallback, "a number",
                               [](lua_State* S) -> std::optional<double> {
                                   if (lua_type(S, -1) != LUA_TNUMBER) return std::nullopt;
                                   return lua_tonumber(S, -1);
                               });
}

std::int64_t option_int(lua_State* L, int index, const char* key, std::int64_t fallback) {
    return read_option<std::int64_t>(
        L, index, key, fallback, "an integer", [](lua_State* S) -> std::optional<std::int64_t> {
            if (lua_type(S, -1) != LUA_TNUMBER || !is_integral(lua_tonumber(S, -1)))
                return std::nullopt;
            return static_cast<std::int64_t>(lua_tonumber(S, -1));
        });
}

bool option_bool(lua_State* L, int index, const char* key, bool fallback) {
    return read_option<bool>(L, index, key, fallback, "a boolean",
                             [](lua_State* S) -> std::optional<bool> {
                                 if (lua_type(S, -1) != LUA_TBOOLEAN) return std::nullopt;
                                 return lua_toboolean(S, -1) != 0;
                             });
}

std::string option_string(lua_State* L, int index, const char* key, const std::string& fallback) {
    return read_option<std::string>(L, index, key, fallback, "a string",
                                    [](lua_State* S) -> std::optional<std::string> {
                                        if (lua_type(S, -1) != LUA_TSTRING) return std::nullopt;
                                        return std::string(lua_tostring(S, -1));
                                    });
}

void set_number(lua_State* L, const char* key, double value) {
    lua_pushnumber(L, value);
    lua_setfield(L, -2, key);
}

void set_string(lua_State* L, const char* key, const std::string& value) {
    lua_pushstring(L, value.c_str());
    lua_setfield(L, -2, key);
}

bool push_missing(lua_State* L, const std::string& path, const char* missing) {
    std::error_code error;
    if (std::filesystem::exists(path, error)) return false;
    lua_pushnil(L);
    lua_pushstring(L, (path + ": " + missing).c_str());
    return true;
}

}  // namespace tandem::lua

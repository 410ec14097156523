// Argument checks for the Lua binding: every bound function reads its arguments through these
// helpers before it does any work (luv's order: check everything into plain values, then act).
//
// The helpers never call luaL_argerror: they throw ArgError (bad argument, wrong type, freed
// object) or ConfigError (unknown option), and wrap() (wrap.h) turns the exception into a Lua
// error once no C++ frame is left to unwind. Userdata are "boxes": a std::optional<T> built in
// place in the userdata's memory; freeing (":free()" or __gc) empties it, so a freed object is
// detected ("tensor was freed") instead of dangling.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <lua.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "tensor/shape.h"

namespace tandem::lua {

// A bad argument at stack index `index`; wrap() words it as luaL_argerror does:
// "bad argument #2 to 'forward' (tandem.Tensor expected, got table)".
class ArgError : public std::runtime_error {
public:
    ArgError(int index, const std::string& message) : std::runtime_error(message), index(index) {}
    int index;
};

// Metatable names (also each type's __name, so messages show them).
inline constexpr const char* kTensorType = "tandem.Tensor";
inline constexpr const char* kDeviceType = "tandem.Device";
inline constexpr const char* kLayerType = "tandem.Layer";
inline constexpr const char* kDatasetType = "tandem.Dataset";
inline constexpr const char* kLossType = "tandem.Loss";
inline constexpr const char* kEngineType = "tandem.Engine";
inline constexpr const char* kOptimizerType = "tandem.Optimizer";
inline constexpr const char* kScheduleType = "tandem.Schedule";
inline constexpr const char* kMetricsLogType = "tandem.MetricsLog";
inline constexpr const char* kPlanCostsType = "tandem.PlanCosts";

// What a userdata holds. Empty once freed; the box itself is never destroyed, so a second
// free (or __gc after :free()) finds it empty and does nothing.
template <class T>
struct Box {
    std::optional<T> value;
};

// Pushes a new userdata holding `value`, with the metatable `type` (created by module.cpp).
template <class T>
T& push_box(lua_State* L, const char* type, T value) {
    static_assert(alignof(Box<T>) <= 8, "LuaJIT aligns userdata to 8 bytes");
    auto* box = new (lua_newuserdata(L, sizeof(Box<T>))) Box<T>{};
    luaL_getmetatable(L, type);
    lua_setmetatable(L, -2);
    box->value.emplace(std::move(value));
    return *box->value;
}

// The type name of the value at `index` for messages: a userdata's __name, else Lua's name.
std::string type_name(lua_State* L, int index);

// The object in the box of metatable `type` at `index`; ArgError when it is something else
// ("tandem.Tensor expected, got table") or freed ("<what> was freed").
template <class T>
T& check_box(lua_State* L, int index, const char* type, const char* what) {
    auto* box = static_cast<Box<T>*>(luaL_testudata(L, index, type));
    if (box == nullptr)
        throw ArgError(index, std::string(type) + " expected, got " + type_name(L, index));
    if (!box->value) throw ArgError(index, std::string(what) + " was freed");
    return *box->value;
}

// __gc, and ":free()" (through wrap<>), for a box of T with metatable `Type`: releases the C++
// object now. Checks the type, since a metatable's __gc can be called by hand on anything.
template <class T, const char* const& Type>
int release_box(lua_State* L) {
    auto* box = static_cast<Box<T>*>(luaL_testudata(L, 1, Type));
    if (box == nullptr) throw ArgError(1, std::string(Type) + " expected, got " + type_name(L, 1));
    box->value.reset();
    return 0;
}

// The value at `index` for a message: the number itself, else its type name ("2.5", "string").
std::string number_or_type(lua_State* L, int index);

// Whether the value at `index` is a userdata of metatable `type` (freed or not).
bool is_type(lua_State* L, int index, const char* type);

// Scalars. check_* need the value; opt_* return `fallback` for none or nil.
double check_number(lua_State* L, int index);
std::int64_t check_int(lua_State* L, int index);
bool check_bool(lua_State* L, int index);
std::string check_string(lua_State* L, int index);
// parse(the string at `index`), a ConfigError it throws made the argument's (parse_layout,
// parse_precision: the message lists the names known).
template <class Parse>
auto check_named(lua_State* L, int index, Parse parse) -> decltype(parse(std::string())) {
    const std::string text = check_string(L, index);
    try {
        return parse(text);
    } catch (const ConfigError& e) {
        throw ArgError(index, e.what());
    }
}
double opt_number(lua_State* L, int index, double fallback);
std::int64_t opt_int(lua_State* L, int index, std::int64_t fallback);
bool opt_bool(lua_State* L, int index, bool fallback);
std::string opt_string(lua_State* L, int index, const std::string& fallback);
// An integer in [low, high]: "<what> must be in [1, 64], got 0".
std::int64_t check_int_in(lua_State* L, int index, std::int64_t low, std::int64_t high,
                          const char* what);

// A shape given as a list of non-negative integers: {8, 3, 32, 32}.
Shape check_shape(lua_State* L, int index);
// The same shape as a Lua list, pushed.
void push_shape(lua_State* L, const Shape& shape);

// An options table at `index` (none or nil is an empty one). Throws ConfigError for a key not
// in `known`: "<function>: unknown option 'padd' (known: bias, groups, pad)".
void check_options(lua_State* L, int index, const char* function,
                   std::initializer_list<const char*> known);
void check_options(lua_State* L, int index, const char* function,
                   const std::vector<std::string>& known);
// One option's value (after check_options); `fallback` when the key is absent.
double option_number(lua_State* L, int index, const char* key, double fallback);
std::int64_t option_int(lua_State* L, int index, const char* key, std::int64_t fallback);
bool option_bool(lua_State* L, int index, const char* key, bool fallback);
std::string option_string(lua_State* L, int index, const char* key, const std::string& fallback);
// Whether the options table at `index` has `key` (false when there is no table).
bool has_option(lua_State* L, int index, const char* key);

// When `path` does not exist: pushes nil and "<path>: <missing>" (a reader's answer for a
// missing file, as io.open gives it) and returns true. Readers that take a folder as well say
// "no such file or directory".
bool push_missing(lua_State* L, const std::string& path, const char* missing = "no such file");

// Field `key` of the table on top of the stack, for results returned as tables.
void set_number(lua_State* L, const char* key, double value);
void set_string(lua_State* L, const char* key, const std::string& value);

// Calls `each(i)` with the list's i-th item pushed (1-based), for every item of the list (a
// table) at absolute index `list`, popping it after.
template <class F>
void for_each_item(lua_State* L, int list, F&& each) {
    for (int i = 1;; ++i) {
        lua_rawgeti(L, list, i);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            return;
        }
        each(i);
        lua_pop(L, 1);
    }
}

}  // namespace tandem::lua

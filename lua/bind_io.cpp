// T.save / T.load: tensors to and from safetensors files (core/io/safetensors.h); and
// T.save_image_grid: images as a PNG grid (core/io/image_grid.h).
//
// Return conventions (STYLE: errors raise, expected outcomes return nil, message):
//  - T.save raises on bad arguments and when the file cannot be written: a checkpoint that
//    silently failed to save is worse than a stopped run.
//  - T.load returns nil, message when the file does not exist (a recipe may branch on "no
//    checkpoint yet"); it raises on bad arguments and on a file that exists but is unreadable
//    or malformed.
#include <filesystem>
#include <map>

#include "binding.h"
#include "io/image_grid.h"
#include "io/safetensors.h"
#include "objects.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

// The string-keyed table at `index` as (name, tensor) pairs; ArgError naming a bad entry.
NamedTensors check_named_tensors(lua_State* L, int index) {
    if (!lua_istable(L, index))
        throw ArgError(index, "table of name = tensor expected, got " + type_name(L, index));
    NamedTensors tensors;
    lua_pushnil(L);
    while (lua_next(L, index) != 0) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            lua_pop(L, 2);
            throw ArgError(index, "tensor names must be strings");
        }
        const std::string name = lua_tostring(L, -2);
        if (!is_type(L, -1, kTensorType)) {
            const std::string got = type_name(L, -1);
            lua_pop(L, 2);
            throw ArgError(index, "entry '" + name + "' is a " + got + ", expected a tensor");
        }
        auto* box = static_cast<Box<Tensor>*>(lua_touserdata(L, -1));
        if (!box->value) {
            lua_pop(L, 2);
            throw ArgError(index, "entry '" + name + "': tensor was freed");
        }
        tensors.emplace_back(name, *box->value);
        lua_pop(L, 1);
    }
    return tensors;
}

// A string-to-string table; numbers and booleans are written as text.
std::map<std::string, std::string> check_metadata(lua_State* L, int index) {
    std::map<std::string, std::string> metadata;
    if (lua_isnoneornil(L, index)) return metadata;
    if (!lua_istable(L, index))
        throw ArgError(index, "metadata table expected, got " + type_name(L, index));
    lua_pushnil(L);
    while (lua_next(L, index) != 0) {
        const int type = lua_type(L, -1);
        if (lua_type(L, -2) != LUA_TSTRING ||
            (type != LUA_TSTRING && type != LUA_TNUMBER && type != LUA_TBOOLEAN)) {
            lua_pop(L, 2);
            throw ArgError(index, "metadata must map strings to strings, numbers or booleans");
        }
        std::string value;
        if (type == LUA_TBOOLEAN) {
            value = lua_toboolean(L, -1) ? "true" : "false";
        } else {
            value = lua_tostring(L, -1);  // converts the value in place; the key stays as it is
        }
        metadata[lua_tostring(L, -2)] = value;
        lua_pop(L, 1);
    }
    return metadata;
}

// T.save(path, {name = tensor, ...} [, metadata]) -> true
int io_save(lua_State* L) {
    const std::string path = check_string(L, 1);
    const NamedTensors tensors = check_named_tensors(L, 2);
    const auto metadata = check_metadata(L, 3);
    save_safetensors(path, tensors, metadata);
    lua_pushboolean(L, 1);
    return 1;
}

// T.load(path [, device]) -> {name = tensor, ...}, metadata  |  nil, message (no such file)
int io_load(lua_State* L) {
    const std::string path = check_string(L, 1);
    Device& device = lua_isnoneornil(L, 2) ? host_device() : *check_device(L, 2);
    std::error_code error;
    if (!std::filesystem::exists(path, error)) {
        lua_pushnil(L);
        lua_pushstring(L, (path + ": no such file").c_str());
        return 2;
    }
    SafetensorsContents contents = load_safetensors(path, device);
    lua_createtable(L, 0, static_cast<int>(contents.tensors.size()));
    for (auto& [name, tensor] : contents.tensors) {
        push_tensor(L, std::move(tensor));
        lua_setfield(L, -2, name.c_str());
    }
    lua_createtable(L, 0, static_cast<int>(contents.metadata.size()));
    for (const auto& [key, value] : contents.metadata) {
        lua_pushstring(L, value.c_str());
        lua_setfield(L, -2, key.c_str());
    }
    return 2;
}

// core.save_image_grid(path, images, columns, low, high) (init.lua's T.save_image_grid checks
// the options)
int io_save_image_grid(lua_State* L) {
    const std::string path = check_string(L, 1);
    const Tensor& images = check_tensor(L, 2);
    ImageGridOptions o;
    o.columns = static_cast<int>(check_int(L, 3));
    o.low = static_cast<float>(check_number(L, 4));
    o.high = static_cast<float>(check_number(L, 5));
    save_image_grid(path, images, o);
    return 0;
}

const luaL_Reg kIoFunctions[] = {
    {"save", wrap<io_save>},
    {"save_image_grid", wrap<io_save_image_grid>},
    {"load", wrap<io_load>},
    {nullptr, nullptr},
};

}  // namespace

void register_io(lua_State* L, int module) {
    add_functions(L, module, kIoFunctions);
}

}  // namespace tandem::lua

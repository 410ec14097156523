// tandem.Tensor: T.tensor / T.zeros / T.ones / T.randn and the tensor methods.
//
// Tensors made here live on the host device (the one that holds parameters before placement);
// t:to(device) copies one to a device from T.devices. Values cross to and from Lua in logical
// (row-major) order whatever the tensor's layout.
#include <cmath>
#include <string>
#include <vector>

#include "base/rng.h"
#include "binding.h"
#include "objects.h"
#include "option_table.h"
#include "tensor/tensor_schema.h"
#include "wrap.h"

namespace tandem::lua {

Tensor& check_tensor(lua_State* L, int index) {
    return check_box<Tensor>(L, index, kTensorType, "tensor");
}

void push_tensor(lua_State* L, Tensor tensor) {
    push_box(L, kTensorType, std::move(tensor));
}

namespace {

// Reads a nested Lua table of numbers ({{1, 2}, {3, 4}}) into its shape and flat values.
class NestedReader {
public:
    NestedReader(lua_State* L, int arg) : L_(L), arg_(arg) {}

    // Reads the table on the top of the stack.
    void read(int depth, const std::string& path) {
        if (depth >= kMaxDepth) fail(path + " is nested deeper than 16 levels");
        const auto n = static_cast<std::int64_t>(lua_objlen(L_, -1));
        if (static_cast<int>(dims_.size()) == depth)
            dims_.push_back(n);
        else if (dims_[static_cast<std::size_t>(depth)] != n)
            fail("ragged nested table: " + where(path) + " has " + std::to_string(n) +
                 " entries, expected " + std::to_string(dims_[static_cast<std::size_t>(depth)]));
        for (std::int64_t i = 1; i <= n; ++i) {
            lua_rawgeti(L_, -1, static_cast<int>(i));
            const std::string at = path + "[" + std::to_string(i) + "]";
            if (lua_type(L_, -1) == LUA_TNUMBER) {
                if (leaf_ < 0) leaf_ = depth;
                if (leaf_ != depth || static_cast<int>(dims_.size()) != depth + 1)
                    fail("ragged nested table: entry " + at + " is a number, expected a table");
                values_.push_back(lua_tonumber(L_, -1));
            } else if (lua_istable(L_, -1)) {
                if (leaf_ >= 0 && leaf_ <= depth)
                    fail("ragged nested table: entry " + at + " is a table, expected a number");
                read(depth + 1, at);
            } else {
                fail("entry " + at + " is a " + type_name(L_, -1) + ", expected a number");
            }
            lua_pop(L_, 1);
        }
    }

    Shape shape() const { return Shape(dims_); }
    const std::vector<double>& values() const { return values_; }

private:
    static constexpr int kMaxDepth = 16;
    static std::string where(const std::string& path) {
        return path.empty() ? "the table" : "entry " + path;
    }
    [[noreturn]] void fail(const std::string& message) { throw ArgError(arg_, message); }

    lua_State* L_;
    int arg_;
    int leaf_ = -1;  // depth of the tables that hold numbers, once seen
    std::vector<std::int64_t> dims_;
    std::vector<double> values_;
};

// Values for an integer tensor: each must be a whole number in [low, high].
template <class T>
Tensor integer_tensor(const Shape& shape, const std::vector<double>& values, DType dtype,
                      double low, double high) {
    Tensor t = Tensor::empty(shape, host_device(), dtype);
    T* p = t.data<T>();
    for (std::size_t i = 0; i < values.size(); ++i) {
        const double v = values[i];
        if (v != std::floor(v) || v < low || v > high)
            throw ArgError(1, "value " + std::to_string(v) + " at flat index " +
                                  std::to_string(i + 1) + " does not fit " +
                                  std::string(dtype_name(dtype)));
        p[i] = static_cast<T>(v);
    }
    return t;
}

// T.tensor(values [, shape] [, {dtype = 'f32' | 'i32' | 'u8'}]): from a nested table, or a
// flat list given a shape. Integer dtypes hold labels (i32) and bytes (u8).
int tensor_new(lua_State* L) {
    if (!lua_istable(L, 1)) throw ArgError(1, "table of numbers expected, got " + type_name(L, 1));
    const std::string dtype = OptionTable(L, 3, tensor_option_schema()).text("dtype");
    NestedReader reader(L, 1);
    lua_pushvalue(L, 1);
    reader.read(0, "");
    lua_pop(L, 1);
    Shape shape = reader.shape();
    if (!lua_isnoneornil(L, 2)) {
        const Shape wanted = check_shape(L, 2);
        if (wanted.numel() != shape.numel())
            throw ArgError(2, "shape " + wanted.to_string() + " holds " +
                                  std::to_string(wanted.numel()) + " elements, the table has " +
                                  std::to_string(shape.numel()));
        shape = wanted;
    }
    if (dtype == "i32")
        push_tensor(L, integer_tensor<int>(shape, reader.values(), DType::i32, -2147483648.0,
                                           2147483647.0));
    else if (dtype == "u8")
        push_tensor(L, integer_tensor<unsigned char>(shape, reader.values(), DType::u8, 0, 255));
    else
        push_tensor(L, Tensor::from_vector(
                           shape, host_device(),
                           std::vector<float>(reader.values().begin(), reader.values().end())));
    return 1;
}

int tensor_zeros(lua_State* L) {
    const Shape shape = check_shape(L, 1);
    push_tensor(L, Tensor::zeros(shape, host_device()));
    return 1;
}

int tensor_ones(lua_State* L) {
    const Shape shape = check_shape(L, 1);
    Tensor t = Tensor::empty(shape, host_device());
    t.fill(1.f);
    push_tensor(L, std::move(t));
    return 1;
}

// T.randn(shape [, seed]): standard normal values, a pure function of (seed, index).
int tensor_randn(lua_State* L) {
    const Shape shape = check_shape(L, 1);
    const auto seed = static_cast<std::uint64_t>(opt_int(L, 2, 0));
    std::vector<float> values(static_cast<std::size_t>(shape.numel()));
    const std::uint64_t key = rng_key(seed, "randn");
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = rng_normal(key, i);
    push_tensor(L, Tensor::from_vector(shape, host_device(), values));
    return 1;
}

// Every element, in logical order, as doubles (f32, i32 and u8 tensors alike).
std::vector<double> logical_values(const Tensor& t) {
    if (t.dtype() == DType::f32) {
        const auto v = t.to_vector();
        return {v.begin(), v.end()};
    }
    Tensor host = t.device().host_accessible() ? t : t.to(host_device());
    host = host.to_layout(Layout::contiguous);
    std::vector<double> out(static_cast<std::size_t>(host.numel()));
    if (host.dtype() == DType::i32) {
        const int* p = host.data<int>();
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = p[i];
    } else {
        const unsigned char* p = host.data<unsigned char>();
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = p[i];
    }
    return out;
}

// Pushes values[offset...] as nested tables over dims [depth, rank).
void push_nested(lua_State* L, const Shape& shape, int depth, const std::vector<double>& values,
                 std::size_t& offset) {
    const int n = static_cast<int>(shape[depth]);
    lua_createtable(L, n, 0);
    for (int i = 1; i <= n; ++i) {
        if (depth + 1 == shape.rank())
            lua_pushnumber(L, values[offset++]);
        else
            push_nested(L, shape, depth + 1, values, offset);
        lua_rawseti(L, -2, i);
    }
}

int tensor_shape(lua_State* L) {
    push_shape(L, check_tensor(L, 1).shape());
    return 1;
}

// t:size(dim): the extent of dimension `dim` (1-based; negative counts from the end).
int tensor_size(lua_State* L) {
    const Tensor& t = check_tensor(L, 1);
    const int rank = t.shape().rank();
    if (lua_isnoneornil(L, 2)) {
        lua_pushnumber(L, static_cast<lua_Number>(t.numel()));
        return 1;
    }
    std::int64_t dim = check_int(L, 2);
    if (dim < 0) dim += rank + 1;
    if (dim < 1 || dim > rank)
        throw ArgError(2, "dimension " + std::to_string(check_int(L, 2)) + " out of range for " +
                              t.description() + " (rank " + std::to_string(rank) + ")");
    lua_pushnumber(L, static_cast<lua_Number>(t.shape()[static_cast<int>(dim - 1)]));
    return 1;
}

int tensor_numel(lua_State* L) {
    lua_pushnumber(L, static_cast<lua_Number>(check_tensor(L, 1).numel()));
    return 1;
}

int tensor_dtype(lua_State* L) {
    const DType d = check_tensor(L, 1).dtype();
    lua_pushstring(L, d == DType::f32 ? "f32" : d == DType::i32 ? "i32" : "u8");
    return 1;
}

int tensor_layout(lua_State* L) {
    const std::string_view name = layout_name(check_tensor(L, 1).layout());
    lua_pushlstring(L, name.data(), name.size());
    return 1;
}

int tensor_device_name(lua_State* L) {
    lua_pushstring(L, check_tensor(L, 1).device().name().c_str());
    return 1;
}

// t:to_table(): nested tables in the tensor's shape (a number for a rank-0 tensor).
int tensor_to_table(lua_State* L) {
    const Tensor& t = check_tensor(L, 1);
    const auto values = logical_values(t);
    if (t.shape().rank() == 0) {
        lua_pushnumber(L, values.at(0));
        return 1;
    }
    std::size_t offset = 0;
    push_nested(L, t.shape(), 0, values, offset);
    return 1;
}

int tensor_to_flat(lua_State* L) {
    const auto values = logical_values(check_tensor(L, 1));
    lua_createtable(L, static_cast<int>(values.size()), 0);
    for (std::size_t i = 0; i < values.size(); ++i) {
        lua_pushnumber(L, values[i]);
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    return 1;
}

// t:reshape(shape): a view with the same elements (contiguous tensors only).
int tensor_reshape(lua_State* L) {
    const Tensor& t = check_tensor(L, 1);
    const Shape shape = check_shape(L, 2);
    push_tensor(L, t.reshape(shape));
    return 1;
}

// t:to(device): a copy on `device`.
int tensor_to(lua_State* L) {
    const Tensor& t = check_tensor(L, 1);
    Device& device = *check_device(L, 2);
    push_tensor(L, t.to(device));
    return 1;
}

int tensor_clone(lua_State* L) {
    push_tensor(L, check_tensor(L, 1).clone());
    return 1;
}

// t:copy(src): overwrites t's values from a tensor of the same shape and dtype, or from a
// flat list of numbers in logical order (f32 tensors). Returns t.
int tensor_copy(lua_State* L) {
    Tensor& t = check_tensor(L, 1);
    if (lua_istable(L, 2)) {
        const auto n = static_cast<std::int64_t>(lua_objlen(L, 2));
        if (n != t.numel())
            throw ArgError(2, "the list has " + std::to_string(n) + " values, " + t.description() +
                                  " holds " + std::to_string(t.numel()));
        std::vector<float> values(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) {
            lua_rawgeti(L, 2, static_cast<int>(i + 1));
            const bool ok = lua_type(L, -1) == LUA_TNUMBER;
            values[static_cast<std::size_t>(i)] = static_cast<float>(lua_tonumber(L, -1));
            lua_pop(L, 1);
            if (!ok) throw ArgError(2, "entry " + std::to_string(i + 1) + " is not a number");
        }
        t.copy_from(values);
    } else {
        const Tensor& src = check_tensor(L, 2);
        t.copy_from(src);
    }
    lua_settop(L, 1);
    return 1;
}

// t:fill(value): every element set to `value` (f32 tensors). Returns t.
int tensor_fill(lua_State* L) {
    Tensor& t = check_tensor(L, 1);
    t.fill(static_cast<float>(check_number(L, 2)));
    lua_settop(L, 1);
    return 1;
}

int tensor_tostring(lua_State* L) {
    auto* box = static_cast<Box<Tensor>*>(luaL_testudata(L, 1, kTensorType));
    if (box == nullptr) throw ArgError(1, "tandem.Tensor expected, got " + type_name(L, 1));
    lua_pushstring(L, box->value ? box->value->description().c_str() : "Tensor(freed)");
    return 1;
}

const luaL_Reg kTensorMethods[] = {
    {"shape", wrap<tensor_shape>},
    {"size", wrap<tensor_size>},
    {"numel", wrap<tensor_numel>},
    {"dtype", wrap<tensor_dtype>},
    {"layout", wrap<tensor_layout>},
    {"device_name", wrap<tensor_device_name>},
    {"to_table", wrap<tensor_to_table>},
    {"to_flat", wrap<tensor_to_flat>},
    {"reshape", wrap<tensor_reshape>},
    {"to", wrap<tensor_to>},
    {"clone", wrap<tensor_clone>},
    {"copy", wrap<tensor_copy>},
    {"fill", wrap<tensor_fill>},
    {"free", wrap<release_box<Tensor, kTensorType>>},
    {nullptr, nullptr},
};

const luaL_Reg kTensorFunctions[] = {
    {"tensor", wrap<tensor_new>}, {"zeros", wrap<tensor_zeros>},
    {"ones", wrap<tensor_ones>},  {"randn", wrap<tensor_randn>},
    {nullptr, nullptr},
};

}  // namespace

void register_tensor(lua_State* L, int module) {
    define_type(L, module,
                {kTensorType, wrap<release_box<Tensor, kTensorType>>, kTensorMethods,
                 wrap<tensor_tostring>});
    add_functions(L, module, kTensorFunctions);
}

}  // namespace tandem::lua

// Tensor math from Lua (issue 18): `a + b`, `x:exp()`, `x:sum(2)`, `x:matmul(w)`, `T.cat`, ...
// over core/tensor/tensor_math.h.
//
// Lua counts dimensions and indices from 1 (as Torch7 does) and negative dimensions from the
// end; this file maps them to the core's 0-based ones and checks them first, so that a range
// error names the dimension as the recipe wrote it. Everything else (dtype, device, shapes)
// is checked by the core, whose messages name the function and the tensors.
#include <string>
#include <vector>

#include "binding.h"
#include "objects.h"
#include "tensor/tensor_math.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

// The 0-based dimension for the Lua dimension at `index` (1..rank, or -rank..-1 from the end).
int check_dim(lua_State* L, int index, const Tensor& t) {
    const std::int64_t given = check_int(L, index);
    const int rank = t.shape().rank();
    if (rank == 0) throw ArgError(index, t.description() + " has no dimensions");
    const std::int64_t dim = given < 0 ? given + rank : given - 1;
    if (dim < 0 || dim >= rank)
        throw ArgError(index, "dimension " + std::to_string(given) + " out of range for " +
                                  t.description() + " (rank " + std::to_string(rank) + ": 1 to " +
                                  std::to_string(rank) + ", or -" + std::to_string(rank) +
                                  " to -1 from the end)");
    return static_cast<int>(dim);
}

// The operand of an arithmetic metamethod that is not a number.
const Tensor& check_operand(lua_State* L, int index) {
    if (!is_type(L, index, kTensorType))
        throw ArgError(index, "tandem.Tensor or number expected, got " + type_name(L, index));
    return check_tensor(L, index);
}

// a op b for the metamethods __add, __sub, __mul, __div: a number on either side.
template <BinaryOp Op>
int tensor_arith(lua_State* L) {
    if (lua_type(L, 1) == LUA_TNUMBER)
        push_tensor(L, binary(Op, static_cast<float>(lua_tonumber(L, 1)), check_operand(L, 2)));
    else if (lua_type(L, 2) == LUA_TNUMBER)
        push_tensor(L, binary(Op, check_operand(L, 1), static_cast<float>(lua_tonumber(L, 2))));
    else
        push_tensor(L, binary(Op, check_operand(L, 1), check_operand(L, 2)));
    return 1;
}

template <UnaryOp Op>
int tensor_unary(lua_State* L) {
    push_tensor(L, unary(Op, check_tensor(L, 1)));
    return 1;
}

int tensor_pow(lua_State* L) {
    const Tensor& x = check_tensor(L, 1);
    push_tensor(L, pow(x, static_cast<float>(check_number(L, 2))));
    return 1;
}

int tensor_matmul(lua_State* L) {
    const Tensor& a = check_tensor(L, 1);
    push_tensor(L, matmul(a, check_tensor(L, 2)));
    return 1;
}

// The keepdim option of a reduction at `index` (an options table, or none).
bool keepdim_option(lua_State* L, int index, const char* function) {
    check_options(L, index, function, {"keepdim"});
    return option_bool(L, index, "keepdim", false);
}

// x:sum([dim] [, {keepdim = false}]) and x:mean(...): a tensor along `dim`; a number without.
template <bool Mean>
int tensor_reduce(lua_State* L) {
    const Tensor& x = check_tensor(L, 1);
    const char* name = Mean ? "mean" : "sum";
    const bool keepdim = keepdim_option(L, 3, name);
    if (lua_isnoneornil(L, 2)) {
        lua_pushnumber(L, Mean ? mean_all(x) : sum_all(x));
        return 1;
    }
    const int dim = check_dim(L, 2, x);
    push_tensor(L, Mean ? mean(x, dim, keepdim) : sum(x, dim, keepdim));
    return 1;
}

// The core's 0-based i32 indices as Lua's 1-based ones (in place: the tensor is new).
Tensor one_based(Tensor indices) {
    int* p = indices.data<int>();
    for (std::int64_t i = 0; i < indices.numel(); ++i) ++p[i];
    return indices;
}

// x:max([dim] [, {keepdim = false}]): values and 1-based indices (an i32 tensor) along `dim`;
// without a dimension, the largest value and its flat 1-based index.
int tensor_max(lua_State* L) {
    const Tensor& x = check_tensor(L, 1);
    const bool keepdim = keepdim_option(L, 3, "max");
    if (lua_isnoneornil(L, 2)) {
        const auto [value, at] = max_all(x);
        lua_pushnumber(L, value);
        lua_pushnumber(L, static_cast<lua_Number>(at + 1));
        return 2;
    }
    MaxResult r = max(x, check_dim(L, 2, x), keepdim);
    push_tensor(L, std::move(r.values));
    push_tensor(L, one_based(std::move(r.indices)));
    return 2;
}

// x:argmax([dim] [, {keepdim = false}]): max's indices alone.
int tensor_argmax(lua_State* L) {
    const Tensor& x = check_tensor(L, 1);
    const bool keepdim = keepdim_option(L, 3, "argmax");
    if (lua_isnoneornil(L, 2)) {
        lua_pushnumber(L, static_cast<lua_Number>(max_all(x).second + 1));
        return 1;
    }
    push_tensor(L, one_based(max(x, check_dim(L, 2, x), keepdim).indices));
    return 1;
}

int tensor_transpose(lua_State* L) {
    const Tensor& x = check_tensor(L, 1);
    const int dim0 = check_dim(L, 2, x);
    push_tensor(L, transpose(x, dim0, check_dim(L, 3, x)));
    return 1;
}

// x:narrow(dim, start, length): elements start .. start + length - 1 along `dim` (a copy).
int tensor_narrow(lua_State* L) {
    const Tensor& x = check_tensor(L, 1);
    const int dim = check_dim(L, 2, x);
    const std::int64_t size = x.shape()[dim];
    const std::int64_t start = check_int(L, 3);
    const std::int64_t length = check_int(L, 4);
    if (start < 1 || start > size + 1)
        throw ArgError(3, "start " + std::to_string(start) + " out of range for dimension " +
                              std::to_string(dim + 1) + " of " + x.description() + " (size " +
                              std::to_string(size) + ")");
    if (length < 0 || start - 1 + length > size)
        throw ArgError(4, "length " + std::to_string(length) + " from " + std::to_string(start) +
                              " runs past dimension " + std::to_string(dim + 1) + " of " +
                              x.description() + " (size " + std::to_string(size) + ")");
    push_tensor(L, narrow(x, dim, start - 1, length));
    return 1;
}

// T.cat({tensors}, dim): the tensors joined along `dim`.
int tensor_cat(lua_State* L) {
    if (!lua_istable(L, 1)) throw ArgError(1, "list of tensors expected, got " + type_name(L, 1));
    std::vector<Tensor> xs;
    for_each_item(L, 1, [&](int i) {
        if (!is_type(L, -1, kTensorType))
            throw ArgError(1, "entry " + std::to_string(i) + " is a " + type_name(L, -1) +
                                  ", expected a tandem.Tensor");
        xs.push_back(check_tensor(L, lua_gettop(L)));
    });
    if (xs.empty()) throw ArgError(1, "the list of tensors is empty");
    push_tensor(L, cat(xs, check_dim(L, 2, xs.front())));
    return 1;
}

const luaL_Reg kMetamethods[] = {
    {"__add", wrap<tensor_arith<BinaryOp::add>>}, {"__sub", wrap<tensor_arith<BinaryOp::sub>>},
    {"__mul", wrap<tensor_arith<BinaryOp::mul>>}, {"__div", wrap<tensor_arith<BinaryOp::div>>},
    {"__unm", wrap<tensor_unary<UnaryOp::neg>>},  {nullptr, nullptr},
};

const luaL_Reg kTensorMathMethods[] = {
    {"exp", wrap<tensor_unary<UnaryOp::exp>>},
    {"log", wrap<tensor_unary<UnaryOp::log>>},
    {"tanh", wrap<tensor_unary<UnaryOp::tanh>>},
    {"sigmoid", wrap<tensor_unary<UnaryOp::sigmoid>>},
    {"abs", wrap<tensor_unary<UnaryOp::abs>>},
    {"sqrt", wrap<tensor_unary<UnaryOp::sqrt>>},
    {"neg", wrap<tensor_unary<UnaryOp::neg>>},
    {"pow", wrap<tensor_pow>},
    {"matmul", wrap<tensor_matmul>},
    {"sum", wrap<tensor_reduce<false>>},
    {"mean", wrap<tensor_reduce<true>>},
    {"max", wrap<tensor_max>},
    {"argmax", wrap<tensor_argmax>},
    {"transpose", wrap<tensor_transpose>},
    {"narrow", wrap<tensor_narrow>},
    {nullptr, nullptr},
};

const luaL_Reg kTensorMathFunctions[] = {
    {"cat", wrap<tensor_cat>},
    {nullptr, nullptr},
};

}  // namespace

// Adds to the Tensor metatable that register_tensor defined (module.cpp's define_type builds
// every metatable in one shape; only tensors have arithmetic, so it is added here).
void register_tensor_math(lua_State* L, int module) {
    luaL_getmetatable(L, kTensorType);  // [mt]
    luaL_setfuncs(L, kMetamethods, 0);
    lua_getfield(L, -1, "__index");  // [mt, methods]
    luaL_setfuncs(L, kTensorMathMethods, 0);
    lua_pop(L, 2);
    add_functions(L, module, kTensorMathFunctions);
}

}  // namespace tandem::lua

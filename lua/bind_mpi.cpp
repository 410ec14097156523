// tandem.mpi: the MPI job this process belongs to (core/parallel/mpi_world.h).
//
//   T.mpi.built() -> bool         compiled with MPI
//   T.mpi.rank(), T.mpi.size()    0 and 1 outside an MPI job
//   T.mpi.local_rank(), T.mpi.local_size()   this rank's place among the ranks on its node
//                                 (those sharing its memory), and their count: 0 and 1 outside a
//                                 job
//   T.mpi.all_reduce({numbers}, 'sum' | 'min' | 'max') -> {numbers}   (every rank calls it)
//   T.mpi.all_reduce_tensor(tensor)   sums an f32 host tensor over the ranks, in place
//   T.mpi.barrier()
//   T.mpi.abort(message)          reports and ends the whole job (nothing outside MPI)
#include <vector>

#include "binding.h"
#include "objects.h"
#include "parallel/mpi_world.h"
#include "wrap.h"

namespace tandem::lua {
namespace {

int mpi_built(lua_State* L) {
    lua_pushboolean(L, mpi::built());
    return 1;
}

int mpi_rank(lua_State* L) {
    lua_pushinteger(L, mpi::rank());
    return 1;
}

int mpi_size(lua_State* L) {
    lua_pushinteger(L, mpi::size());
    return 1;
}

int mpi_local_rank(lua_State* L) {
    lua_pushinteger(L, mpi::local_rank());
    return 1;
}

int mpi_local_size(lua_State* L) {
    lua_pushinteger(L, mpi::local_size());
    return 1;
}

int mpi_all_reduce(lua_State* L) {
    if (!lua_istable(L, 1)) throw ArgError(1, "a list of numbers expected, got " + type_name(L, 1));
    const std::string op = lua_isnoneornil(L, 2) ? "sum" : check_string(L, 2);
    std::vector<double> values(lua_objlen(L, 1));
    for (std::size_t i = 0; i < values.size(); ++i) {
        lua_rawgeti(L, 1, static_cast<int>(i + 1));
        if (lua_type(L, -1) != LUA_TNUMBER)
            throw ArgError(1, "item " + std::to_string(i + 1) + " is not a number");
        values[i] = lua_tonumber(L, -1);
        lua_pop(L, 1);
    }
    mpi::all_reduce(values.data(), values.size(), op);
    lua_createtable(L, static_cast<int>(values.size()), 0);
    for (std::size_t i = 0; i < values.size(); ++i) {
        lua_pushnumber(L, values[i]);
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    return 1;
}

int mpi_all_reduce_tensor(lua_State* L) {
    Tensor& t = check_tensor(L, 1);
    mpi::all_reduce_sum(t.data<float>(), static_cast<std::size_t>(t.numel()));
    lua_settop(L, 1);
    return 1;
}

int mpi_barrier(lua_State*) {
    mpi::barrier();
    return 0;
}

int mpi_abort(lua_State* L) {
    mpi::abort_job(check_string(L, 1));
    return 0;
}

const luaL_Reg kMpiFunctions[] = {
    {"built", wrap<mpi_built>},
    {"rank", wrap<mpi_rank>},
    {"size", wrap<mpi_size>},
    {"local_rank", wrap<mpi_local_rank>},
    {"local_size", wrap<mpi_local_size>},
    {"all_reduce", wrap<mpi_all_reduce>},
    {"all_reduce_tensor", wrap<mpi_all_reduce_tensor>},
    {"barrier", wrap<mpi_barrier>},
    {"abort", wrap<mpi_abort>},
    {nullptr, nullptr},
};

}  // namespace

void register_mpi(lua_State* L, int module) {
    add_functions(L, module, kMpiFunctions, "mpi");
}

}  // namespace tandem::lua

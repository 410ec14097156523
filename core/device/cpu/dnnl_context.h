// Glue between tensors and oneDNN: memory descriptors from shapes and layouts, memory objects
// over tensor storage, and oneDNN errors turned into BackendError naming the call.
#pragma once

#include <dnnl.hpp>
#include <string_view>
#include <unordered_map>

#include "device/cpu/cpu_device.h"
#include "tensor/tensor.h"

namespace tandem::cpu {

using dnnl_args = std::unordered_map<int, dnnl::memory>;

// A plain descriptor for `shape` in `layout` (channels_last maps to nhwc strides).
dnnl::memory::desc plain_desc(const Shape& shape, Layout layout = Layout::contiguous,
                              dnnl::memory::data_type type = dnnl::memory::data_type::f32);
// A oneDNN memory object over the tensor's storage (no copy).
dnnl::memory memory_of(const Tensor& t, const dnnl::engine& engine);
// A oneDNN memory object over the tensor's storage, described by `desc` (a workspace, say).
dnnl::memory memory_of(const Tensor& t, const dnnl::memory::desc& desc, const dnnl::engine& engine);

// Runs `what` (a lambda making oneDNN calls); turns dnnl::error into BackendError with the
// call's name and oneDNN's status.
template <class F>
auto dnnl_call(std::string_view call, F&& what) -> decltype(what());

[[noreturn]] void throw_dnnl_error(std::string_view call, const dnnl::error& e);

// Whether oneDNN runs `isa`'s kernels on this machine (its ISA or a later one).
bool dnnl_runs(dnnl::cpu_isa isa);
// The floats in one vector of oneDNN's kernels on this machine: 16 where it runs AVX-512, 8 else.
int dnnl_vector_floats();

template <class F>
auto dnnl_call(std::string_view call, F&& what) -> decltype(what()) {
    try {
        return what();
    } catch (const dnnl::error& e) {
        throw_dnnl_error(call, e);
    }
}

// Executes a primitive on the device's stream and waits for it.
void execute(CpuDevice& device, const dnnl::primitive& primitive, const dnnl_args& args,
             std::string_view what);

// Adds `scratch` into `dst` (same element count), for kernels whose oneDNN primitive
// overwrites a destination our contract says to accumulate into.
void add_into(Tensor& dst, const Tensor& scratch);

}  // namespace tandem::cpu

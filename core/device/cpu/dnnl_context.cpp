#include "device/cpu/dnnl_context.h"

#include "base/error.h"

namespace tandem::cpu {

dnnl::memory::desc plain_desc(const Shape& shape, Layout layout, dnnl::memory::data_type type) {
    dnnl::memory::dims dims(shape.dims().begin(), shape.dims().end());
    const auto strides = layout_strides(shape, layout);
    dnnl::memory::dims dnnl_strides(strides.begin(), strides.end());
    return dnnl::memory::desc(dims, type, dnnl_strides);
}

dnnl::memory memory_of(const Tensor& t, const dnnl::engine& engine) {
    return dnnl::memory(plain_desc(t.shape(), t.layout()), engine, t.raw());
}

dnnl::memory memory_of(const Tensor& t, const dnnl::memory::desc& desc,
                       const dnnl::engine& engine) {
    TANDEM_CHECK(t.nbytes() >= desc.get_size())
        << t.description() << " is too small for a oneDNN buffer of " << desc.get_size()
        << " bytes";
    return dnnl::memory(desc, engine, t.raw());
}

bool dnnl_runs(dnnl::cpu_isa isa) {
    // oneDNN's ISA values are masks, each holding the bits of those below it.
    const auto mine = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    return (mine & static_cast<unsigned>(isa)) == static_cast<unsigned>(isa);
}

int dnnl_vector_floats() {
    return dnnl_runs(dnnl::cpu_isa::avx512_core) ? 16 : 8;
}

void throw_dnnl_error(std::string_view call, const dnnl::error& e) {
    TANDEM_THROW(BackendError) << "oneDNN " << call << " failed: " << e.what() << " (status "
                               << static_cast<int>(e.status) << ")";
}

void execute(CpuDevice& device, const dnnl::primitive& primitive, const dnnl_args& args,
             std::string_view what) {
    dnnl_call(what, [&] {
        primitive.execute(device.dnnl_stream(), args);
        device.dnnl_stream().wait();
    });
}

void add_into(Tensor& dst, const Tensor& scratch) {
    TANDEM_CHECK(dst.numel() == scratch.numel())
        << "cannot add " << scratch.description() << " into " << dst.description();
    float* d = dst.data<float>();
    const float* s = scratch.data<float>();
    const std::int64_t n = dst.numel();
#pragma omp parallel for simd if (n > 65536)
    for (std::int64_t i = 0; i < n; ++i) d[i] += s[i];
}

}  // namespace tandem::cpu

#include "device/cpu/cpu_device.h"

#include <omp.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "base/error.h"
#include "device/cpu/cpu_peak.h"
#include "device/cpu/dnnl_context.h"

namespace tandem {

std::size_t host_physical_memory() {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size);
}

int host_core_count() {
    return std::max(1u, std::thread::hardware_concurrency());
}

CpuDevice::CpuDevice(int index, const CpuDeviceOptions& options)
    : Device(DeviceKind::cpu, index, options.threads > 0 ? options.threads : host_core_count()),
      engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    allocator_ = std::make_unique<HostAllocator>(
        name(), options.memory > 0 ? options.memory : host_physical_memory());
    worker_ = std::make_unique<Worker>(name(), [this] { bind_calling_thread(); });
}

CpuDevice::~CpuDevice() {
    worker_.reset();  // join the thread before the engine it uses goes away
    attachments_.clear();
}

void CpuDevice::bind_calling_thread() const {
    omp_set_num_threads(threads());
}

void CpuDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) {
    std::memcpy(dst, src, bytes);
}

void CpuDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) {
    std::memcpy(dst, src, bytes);
}

std::string CpuDevice::precision_unavailable(Precision precision) const {
    if (precision == Precision::fp32) return {};
    if (precision != Precision::bf16) return "the cpu backend trains in fp32 and bf16 only";
    if (cpu::dnnl_runs(dnnl::cpu_isa::avx512_core_bf16)) return {};
    return "its CPU (" + cpu_identity() +
           ") has neither AVX512_BF16 nor AMX, which oneDNN's bf16 kernels need";
}

CpuDevice& as_cpu(Device& device) {
    auto* cpu = dynamic_cast<CpuDevice*>(&device);
    TANDEM_CHECK_AS(BackendError, cpu != nullptr)
        << device.name() << " is not a CPU device, but a CPU kernel was asked to run on it";
    return *cpu;
}

}  // namespace tandem

// CpuDevice: a slice of the host as a device — host memory under a cap, one worker thread,
// and a oneDNN engine and stream whose kernels use `threads` OpenMP threads.
#pragma once

#include <dnnl.hpp>

#include "device/device.h"

namespace tandem {

struct CpuDeviceOptions {
    std::size_t memory = 0;  // cap in bytes; 0 means the machine's physical memory
    int threads = 0;         // kernel threads; 0 means all cores
};

class CpuDevice final : public Device {
public:
    CpuDevice(int index, const CpuDeviceOptions& options);
    ~CpuDevice() override;

    bool host_accessible() const override { return true; }
    void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
    void copy_to_host(void* dst, const void* src, std::size_t bytes) override;

    // bf16 needs oneDNN's bf16 kernels: AVX512_BF16 or AMX.
    std::string precision_unavailable(Precision precision) const override;

    dnnl::engine& dnnl_engine() { return engine_; }
    dnnl::stream& dnnl_stream() { return stream_; }

    // Sets the calling thread's OpenMP team size to this device's thread count; the worker
    // calls it at start, and so must any other thread that runs this device's kernels.
    void bind_calling_thread() const;

private:
    dnnl::engine engine_;
    dnnl::stream stream_;
};

// The device's CpuDevice, or a BackendError naming the device when it is not a CPU device.
CpuDevice& as_cpu(Device& device);

// The machine's physical memory and core count, the defaults for CpuDeviceOptions.
std::size_t host_physical_memory();
int host_core_count();

}  // namespace tandem

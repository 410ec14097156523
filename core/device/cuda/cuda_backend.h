// The CUDA backend as the rest of the program sees it: no CUDA header, so the Lua binding and
// the `tandem` command include it without the toolkit's. Compiled only when TANDEM_CUDA is on;
// backends/backends.h says what exists in either build.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "device/device.h"

namespace tandem {

struct CudaDeviceOptions {
    std::size_t memory = 0;     // cap in bytes; 0: 95% of the GPU's free memory at creation
    std::size_t workspace = 0;  // cuDNN's budget; 0: default_workspace_budget (workspace_budget.h)
    bool benchmark = false;     // time convolution algorithms (cudnnFind*Ex) instead of
                                // taking cuDNN's heuristic order (cudnnGet*_v7)
    // TF32 tensor cores (Ampere and later) for convolutions and Linear's GEMMs: products of
    // 10-bit-mantissa inputs, accumulated in float32; faster, but results then differ from
    // the CPU backend's by about 1e-3 relative. Off: float32 FMA math throughout, as the CPU.
    bool tf32 = false;
};

// What cudaGetDeviceCount says. Never throws: a machine without a driver or GPU is a normal
// outcome, described in `reason` (the runtime's error name and text).
struct CudaProbe {
    int count = 0;
    std::string reason;                // empty when count > 0
    std::vector<std::string> devices;  // "cuda:0 NVIDIA H100 80GB HBM3, 79.1 GB, sm_90"
    std::vector<std::string> bus_ids;  // each GPU's PCI bus id, "0000:3b:00.0" (or "cuda:N?")
    std::string versions;  // "CUDA runtime 13.0, driver 13.0, cuDNN 9.19.0, NCCL 2.28.3"
};
CudaProbe probe_cuda();

// GPU `index` (the CUDA ordinal) as a device. Throws BackendError naming the call on failure.
std::unique_ptr<Device> make_cuda_device(int index, const CudaDeviceOptions& options);

}  // namespace tandem

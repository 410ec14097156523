// probe_cuda: what the runtime finds, without throwing (see cuda_backend.h).
#include <cudnn.h>
#include <nccl.h>

#include <cstdio>

#include "base/format.h"
#include "device/cuda/check.h"
#include "device/cuda/cuda_backend.h"

namespace tandem {
namespace {

std::string version_text(int major_minor) {  // CUDA's 13000 -> "13.0"
    return std::to_string(major_minor / 1000) + "." + std::to_string(major_minor % 1000 / 10);
}

std::string versions() {
    std::string text = "CUDA runtime ";
    int runtime = 0, driver = 0;
    text += cudaRuntimeGetVersion(&runtime) == cudaSuccess ? version_text(runtime) : "?";
    text += ", driver ";
    text +=
        cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0 ? version_text(driver) : "none";
    const std::size_t cudnn = cudnnGetVersion();  // 91900 for 9.19.0
    text += ", cuDNN " + std::to_string(cudnn / 10000) + "." + std::to_string(cudnn % 10000 / 100) +
            "." + std::to_string(cudnn % 100);
    int nccl = 0;  // 22803 for 2.28.3
    if (ncclGetVersion(&nccl) == ncclSuccess)
        text += ", NCCL " + std::to_string(nccl / 10000) + "." +
                std::to_string(nccl % 10000 / 100) + "." + std::to_string(nccl % 100);
    cudaGetLastError();
    return text;
}

}  // namespace

CudaProbe probe_cuda() {
    CudaProbe probe;
    probe.versions = versions();
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        // A machine without NVIDIA's driver reports cudaErrorInsufficientDriver, which reads as
        // an outdated driver: say what it is. Other failures keep CUDA's own words.
        int driver = 0;
        const bool no_driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0;
        probe.reason =
            no_driver ? std::string("no NVIDIA driver on this machine")
                      : std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
        cudaGetLastError();
        return probe;
    }
    if (count == 0) {
        probe.reason = "cudaGetDeviceCount found 0 GPUs";
        return probe;
    }
    probe.count = count;
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop{};
        std::string line = "cuda:" + std::to_string(i);
        if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) {
            line += std::string(" ") + prop.name + ", " +
                    format_bytes(double(prop.totalGlobalMem)) + ", sm_" +
                    std::to_string(prop.major) + std::to_string(prop.minor);
        } else {
            line += " (cudaGetDeviceProperties failed)";
            cudaGetLastError();
        }
        std::string peers;
        for (int j = 0; j < count; ++j) {
            int can = 0;
            if (j != i && cudaDeviceCanAccessPeer(&can, i, j) == cudaSuccess && can)
                peers += (peers.empty() ? "" : ", ") + std::string("cuda:") + std::to_string(j);
        }
        cudaGetLastError();
        if (count > 1) line += "; peer access: " + (peers.empty() ? std::string("none") : peers);
        probe.devices.push_back(line);
        char bus[32] = {};
        // The GPU's identity across processes (the ordinal depends on CUDA_VISIBLE_DEVICES).
        if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) == cudaSuccess) {
            probe.bus_ids.emplace_back(bus);
        } else {
            probe.bus_ids.push_back("cuda:" + std::to_string(i) + "?");
            cudaGetLastError();
        }
    }
    return probe;
}

}  // namespace tandem

// What this build can run on: the compiled backends and the devices present. The text of
// `tandem devices`, the REPL banner's backend line, and the "no CUDA device" error are made
// here, so every build (with or without the CUDA backend) says the same things the same way.
#pragma once

#include <string>
#include <vector>

namespace tandem {

struct BackendStatus {
    bool cuda_compiled = false;
    int cuda_count = 0;
    std::string cuda_reason;                // why no GPU was found (cudaGetDeviceCount's error)
    std::vector<std::string> cuda_devices;  // one line per GPU
    std::vector<std::string> cuda_bus_ids;  // each GPU's PCI bus id (device/gpu_share.h)
    std::string cuda_versions;
};

// Probes the CUDA runtime when compiled in (never throws).
BackendStatus backend_status();

// One line: "backends: cpu (oneDNN); cuda: compiled, no device found (<reason>)".
std::string backends_line(const BackendStatus& status);
// `tandem devices`: the backends line, then the CPU and each GPU.
std::vector<std::string> device_report(const BackendStatus& status);

// The number of CUDA devices to make for T.devices('cuda', wanted), wanted < 0 meaning all.
// Throws ConfigError "no CUDA device: ..." saying whether the backend is not compiled in or
// no GPU/driver was found (and why), or how many exist when fewer than asked.
int cuda_devices_to_make(const BackendStatus& status, int wanted);

}  // namespace tandem

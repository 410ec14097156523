#include "backends/backends.h"

#include <thread>

#include "base/error.h"
#include "base/format.h"
#if TANDEM_CUDA
#include "device/cuda/cuda_backend.h"
#endif

namespace tandem {

BackendStatus backend_status() {
    BackendStatus s;
#if TANDEM_CUDA
    const CudaProbe probe = probe_cuda();
    s.cuda_compiled = true;
    s.cuda_count = probe.count;
    s.cuda_reason = probe.reason;
    s.cuda_devices = probe.devices;
    s.cuda_bus_ids = probe.bus_ids;
    s.cuda_versions = probe.versions;
#endif
    return s;
}

std::string backends_line(const BackendStatus& s) {
    std::string line = "backends: cpu (oneDNN); cuda: ";
    if (!s.cuda_compiled) return line + "not compiled in (TANDEM_CUDA=OFF)";
    if (s.cuda_count == 0) return line + "compiled, no GPU here (" + s.cuda_reason + ")";
    return line + "compiled, " + std::to_string(s.cuda_count) +
           (s.cuda_count == 1 ? " device" : " devices");
}

std::vector<std::string> device_report(const BackendStatus& s) {
    std::vector<std::string> lines{backends_line(s)};
    lines.push_back("cpu: the host, " + std::to_string(std::thread::hardware_concurrency()) +
                    " cores (T.devices('cpu', n) cuts it into n devices)");
    if (s.cuda_compiled) lines.push_back("cuda: " + s.cuda_versions);
    for (const auto& d : s.cuda_devices) lines.push_back(d);
    return lines;
}

int cuda_devices_to_make(const BackendStatus& s, int wanted) {
    if (!s.cuda_compiled)
        TANDEM_THROW(ConfigError) << "no CUDA device: cuda is not compiled into this build "
                                     "(TANDEM_CUDA=OFF; compiled backends: cpu)";
    if (s.cuda_count == 0)
        TANDEM_THROW(ConfigError) << "no CUDA device: the backend is compiled in, but no GPU "
                                     "or driver was found ("
                                  << s.cuda_reason << ")";
    if (wanted < 0) return s.cuda_count;
    TANDEM_CHECK_AS(ConfigError, wanted <= s.cuda_count)
        << "no CUDA device: " << wanted << " asked, " << s.cuda_count << " present ("
        << join(s.cuda_devices, "; ") << ")";
    return wanted;
}

}  // namespace tandem

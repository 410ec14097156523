#include "support/cuda_test.h"

#include <map>
#include <mutex>

#include "backends/backends.h"
#include "base/error.h"
#if TANDEM_CUDA
#include "device/cuda/cuda_backend.h"
#endif

namespace tandem::test {

std::string cuda_skip_reason(int needed) {
    static const BackendStatus status = backend_status();
    try {
        cuda_devices_to_make(status, needed);
        return {};
    } catch (const ConfigError& e) {
        return std::string("skipped: ") + e.what();
    }
}

#if TANDEM_CUDA
Device& cuda_test_device(int index) {
    static std::mutex mutex;
    static auto* devices = new std::map<int, Device*>();
    std::lock_guard lock(mutex);
    auto& slot = (*devices)[index];
    if (!slot) {
        CudaDeviceOptions options;
        options.memory = std::size_t(2) << 30;  // plenty for the tests, and a known cap
        slot = make_cuda_device(index, options).release();
    }
    return *slot;
}

std::shared_ptr<Device> own_cuda_device(CudaDeviceOptions options) {
    if (options.memory == 0) options.memory = std::size_t(1) << 30;
    return std::shared_ptr<Device>(make_cuda_device(0, options).release());
}
#endif

}  // namespace tandem::test

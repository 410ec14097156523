#include "device/device.h"

#include <cstring>

#include "base/error.h"

namespace tandem {

void Device::copy_within(void* dst, const void* src, std::size_t bytes) {
    TANDEM_CHECK_AS(BackendError, host_accessible())
        << "device " << name() << " has no copy within its memory (a backend must provide one)";
    if (bytes > 0) std::memcpy(dst, src, bytes);
}

std::string Device::precision_unavailable(Precision precision) const {
    if (precision == Precision::fp32) return {};
    return "the " + std::string(device_kind_name(kind())) + " backend trains in fp32 only";
}

std::string_view device_kind_name(DeviceKind kind) {
    switch (kind) {
        case DeviceKind::cpu: return "cpu";
        case DeviceKind::cuda: return "cuda";
    }
    return "?";
}

}  // namespace tandem

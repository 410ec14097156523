#include "device/device.h"

namespace tandem {

std::string_view device_kind_name(DeviceKind kind) {
    switch (kind) {
        case DeviceKind::cpu: return "cpu";
        case DeviceKind::cuda: return "cuda";
    }
    return "?";
}

}  // namespace tandem

// `tandem devices`: the compiled backends and the devices present, one per line. Runs the
// same with or without a GPU: a machine without one says why (cudaGetDeviceCount's error).
#include <cstdio>

#include "commands.h"
#include "device/backends.h"

namespace tandem::tool {

int command_devices(const Args& args) {
    if (!args.empty()) {
        std::fprintf(stderr, "tandem devices: takes no arguments\n");
        return 2;
    }
    for (const auto& line : device_report(backend_status())) std::printf("%s\n", line.c_str());
    return 0;
}

}  // namespace tandem::tool

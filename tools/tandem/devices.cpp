// `tandem devices`: the compiled backends and the devices present, one per line. Runs the
// same with or without a GPU: a machine without one says why (cudaGetDeviceCount's error).
#include <cstdio>

#include "backends/backends.h"
#include "commands.h"
#include "tool_args.h"

namespace tandem::tool {

const ToolSpec kDevicesSpec{
    "devices", "", "list the compiled backends and the devices present", "", {}, 0, 0};

int command_devices(const Args& args) {
    const ToolArgs a(args, kDevicesSpec);
    for (const auto& line : device_report(backend_status())) std::printf("%s\n", line.c_str());
    return 0;
}

}  // namespace tandem::tool

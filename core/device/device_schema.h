// T.devices' options for each kind of device, once (base/option_schema.h): the binding checks
// T.devices(kind, n, {...}) against them in one loop (lua/bind_device.cpp), Lua reads them as
// core.option_schema('devices.cpu') and ('devices.cuda'), and docs/lua-api.md's tables of them
// are held to them by tests/lua/test_docs.lua. The defaults here are CpuDeviceOptions' and
// CudaDeviceOptions'; tests/core/base/test_option_schema.cpp holds them together.
#pragma once

#include "base/option_schema.h"

namespace tandem {

const OptionSchema& cpu_device_option_schema();
const OptionSchema& cuda_device_option_schema();

}  // namespace tandem

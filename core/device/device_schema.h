// T.devices' options for each kind of device, once (base/option_schema.h): the binding checks
// T.devices(kind, n, {...}) against them in one loop (lua/bind_device.cpp), Lua reads them as
// core.option_schema('devices.cpu') and ('devices.cuda'), and docs/lua-api.md's tables of them
// are held to them by tests/lua/test_docs.lua. The defaults here are CpuDeviceOptions' and
// CudaDeviceOptions'; tests/core/base/test_option_schema.cpp holds them together.
#pragma once

#include <cstddef>

#include "base/option_schema.h"

namespace tandem {

const OptionSchema& cpu_device_option_schema();
const OptionSchema& cuda_device_option_schema();

// cuDNN's workspace budget on a GPU whose options give none (the `workspace` option's default;
// the planner reserves it on every GPU): a sixteenth of the memory cap, at least
// 64 MiB and at most 8 GiB. A timed search (the device's benchmark option) allocates all of it,
// so it is memory the net cannot have. Measured on an H200 (bench/measured/h200-2026-11-27):
// VGG-16's 224-pixel layers at batch 64 took 69.5 ms a step with 1 GiB and 54.9 with 2 GiB
// (TF32; 100.1 against 83.3 with 8 GiB in FP32), at batch 128 173 ms with 1 GiB and 106 with
// 4 GiB; ResNet-50 and AlexNet ran as fast with 1 GiB as with 8.
std::size_t default_workspace_budget(std::size_t memory_cap);

}  // namespace tandem

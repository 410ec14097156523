// cuDNN's default workspace budget: one definition, which the CUDA device (its `workspace`
// option's default, device_schema.cpp) and the planner (TopologyDevice::kernel_reserve_bytes)
// both read. Apart from the option schema so that the planner's topology parser, fuzzed on its
// own (cmake/fuzz.cmake), needs no more than this file.
#pragma once

#include <cstddef>

namespace tandem {

// cuDNN's workspace budget on a GPU whose options give none: a sixteenth of the memory cap, at
// least 64 MiB and at most 8 GiB. A timed search (the device's benchmark option) allocates all of
// it, so it is memory the net cannot have. Measured on an H200 (bench/measured/h200-2026-11-27):
// VGG-16's 224-pixel layers at batch 64 took 69.5 ms a step with 1 GiB and 54.9 with 2 GiB
// (TF32; 100.1 against 83.3 with 8 GiB in FP32), at batch 128 173 ms with 1 GiB and 106 with
// 4 GiB; ResNet-50 and AlexNet ran as fast with 1 GiB as with 8.
std::size_t default_workspace_budget(std::size_t memory_cap);

}  // namespace tandem

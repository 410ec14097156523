// The CPU backend's attention kernel (kernels/attention_kernel.h), declared apart from
// kernels_cpu.h as its kind is declared apart from kernels.h.
#pragma once

#include <memory>

#include "device/device.h"
#include "kernels/attention_kernel.h"

namespace tandem::cpu {

std::unique_ptr<AttentionKernel> make_attention_cpu(Device&, const AttentionConfig&);

}  // namespace tandem::cpu

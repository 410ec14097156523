// The CUDA backend's attention kernel (kernels/attention_kernel.h), declared apart from
// kernels_cuda.h as its kind is declared apart from kernels.h.
#pragma once

#include <memory>

#include "device/device.h"
#include "kernels/attention_kernel.h"

namespace tandem::cuda {

std::unique_ptr<AttentionKernel> make_attention_cuda(Device&, const AttentionConfig&);

}  // namespace tandem::cuda

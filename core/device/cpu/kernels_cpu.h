// Factories of the CPU backend's kernels; register.cpp lists them all in one place.
// `dnnl` kernels run on oneDNN; `reference` kernels are naive loops that serve as the oracle
// in tests and are never the default where a faster one exists.
#pragma once

#include <memory>

#include "device/device.h"
#include "layers/kernels.h"

namespace tandem::cpu {

std::unique_ptr<TensorOpsKernel> make_tensor_ops_cpu(Device&, const TensorOpsConfig&);

std::unique_ptr<ReluKernel> make_relu_dnnl(Device&, const ReluConfig&);
std::unique_ptr<ReluKernel> make_relu_reference(Device&, const ReluConfig&);

std::unique_ptr<Conv2dKernel> make_conv2d_dnnl(Device&, const Conv2dConfig&);
std::unique_ptr<Conv2dKernel> make_conv2d_reference(Device&, const Conv2dConfig&);

std::unique_ptr<LinearKernel> make_linear_dnnl(Device&, const LinearConfig&);
std::unique_ptr<LinearKernel> make_linear_reference(Device&, const LinearConfig&);

}  // namespace tandem::cpu

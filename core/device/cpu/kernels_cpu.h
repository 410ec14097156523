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

std::unique_ptr<DropoutKernel> make_dropout_cpu(Device&, const DropoutConfig&);

std::unique_ptr<SoftmaxCrossEntropyKernel> make_softmax_cross_entropy_cpu(
    Device&, const SoftmaxCrossEntropyConfig&);

}  // namespace tandem::cpu

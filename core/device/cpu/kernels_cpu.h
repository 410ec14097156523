// Factories of the CPU backend's kernels; register.cpp lists them all in one place.
// `dnnl` kernels run on oneDNN; `reference` kernels are naive loops that serve as the oracle
// in tests and are never the default where a faster one exists.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "device/device.h"
#include "kernels/kernels.h"

namespace tandem::cpu {

// Below this many elements (or multiply-adds) an OpenMP team costs more than it saves. Kernels
// whose work per element is much larger or smaller scale it (rnn_cell_cpu.cpp, tensor_ops_cpu.cpp).
constexpr std::int64_t kParallelMin = 1 << 14;

std::unique_ptr<TensorOpsKernel> make_tensor_ops_cpu(Device&, const TensorOpsConfig&);

std::unique_ptr<ActivationKernel> make_activation_dnnl(Device&, const ActivationConfig&);
std::unique_ptr<ActivationKernel> make_activation_reference(Device&, const ActivationConfig&);

std::unique_ptr<DropoutKernel> make_dropout_cpu(Device&, const DropoutConfig&);

std::unique_ptr<ElementLossKernel> make_element_loss_cpu(Device&, const ElementLossConfig&);
std::unique_ptr<RnnCellKernel> make_rnn_cell_cpu(Device&, const RnnCellConfig&);
std::unique_ptr<SoftmaxKernel> make_softmax_cpu(Device&, const SoftmaxConfig&);
std::unique_ptr<EmbeddingKernel> make_embedding_cpu(Device&, const EmbeddingConfig&);
std::unique_ptr<LayerNormKernel> make_layer_norm_cpu(Device&, const LayerNormConfig&);
std::unique_ptr<SoftmaxCrossEntropyKernel> make_softmax_cross_entropy_cpu(
    Device&, const SoftmaxCrossEntropyConfig&);
// Channels-last batch normalisation on our own loops, other layouts on oneDNN
// (batch_norm_nhwc.cpp).
std::unique_ptr<BatchNormKernel> make_batch_norm_cpu(Device&, const BatchNormConfig&);
std::unique_ptr<BatchNormReluKernel> make_batch_norm_relu_cpu(Device&, const BatchNormConfig&);
std::unique_ptr<BatchNormKernel> make_batch_norm_dnnl(Device&, const BatchNormConfig&);
std::unique_ptr<BatchNormKernel> make_batch_norm_reference(Device&, const BatchNormConfig&);
std::unique_ptr<BatchNormReluKernel> make_batch_norm_relu_dnnl(Device&, const BatchNormConfig&);

// Max pooling in channels-last our own way (max_pool_nhwc.cpp); the rest on oneDNN.
std::unique_ptr<Pool2dKernel> make_pool2d_cpu(Device&, const Pool2dConfig&);
std::unique_ptr<Pool2dKernel> make_pool2d_dnnl(Device&, const Pool2dConfig&);
std::unique_ptr<Pool2dKernel> make_pool2d_reference(Device&, const Pool2dConfig&);

std::unique_ptr<LrnKernel> make_lrn_dnnl(Device&, const LrnConfig&);
std::unique_ptr<LrnKernel> make_lrn_reference(Device&, const LrnConfig&);

// The passes of a convolution, which the CPU's default may run on different kernels.
enum class ConvPass { forward, data, weights };
// The kernel (by its registry name) each pass of the CPU's default runs on.
struct Conv2dChoice {
    std::string_view forward, data, weights;
};
// The CPU's Conv2d (make_conv2d_cpu, conv2d_cpu.cpp), pass by pass: Winograd
// (conv2d_winograd.cpp) for the 3x3 and 5x5 stride-1 passes it fits, between at least
// winograd_min_channels each side, whose tiles save enough multiplications; thin_input for a
// layer over few input channels; gemm where it pays (1x1 convolutions, many columns); oneDNN's
// direct kernels else. `vector_floats`: the floats in one of oneDNN's vectors on this machine
// (dnnl_vector_floats: 8 on AVX2, 16 on AVX-512), which sets where its kernels run best.
Conv2dChoice choose_conv2d_cpu(const Conv2dConfig&, int vector_floats);
std::unique_ptr<Conv2dKernel> make_conv2d_cpu(Device&, const Conv2dConfig&);
std::int64_t winograd_min_channels(int vector_floats);
bool winograd_fits(const Conv2dConfig&);
bool winograd_pays(const Conv2dConfig&, ConvPass, int vector_floats);
std::unique_ptr<Conv2dKernel> make_conv2d_winograd(Device&, const Conv2dConfig&);
// The weights' gradient of a layer over at most 4 input channels in our own loop, the rest on
// oneDNN (conv2d_thin_input.cpp).
bool thin_input_fits(const Conv2dConfig&);
std::unique_ptr<Conv2dKernel> make_conv2d_thin_input(Device&, const Conv2dConfig&);
// Convolutions as matrix products on SGEMM (im2col; conv2d_gemm.cpp), every pass; gemm_pays:
// the passes where that beats oneDNN.
bool gemm_fits(const Conv2dConfig&);
bool gemm_pays(const Conv2dConfig&, ConvPass);
std::unique_ptr<Conv2dKernel> make_conv2d_gemm(Device&, const Conv2dConfig&);
std::unique_ptr<Conv2dKernel> make_conv2d_dnnl(Device&, const Conv2dConfig&);
std::unique_ptr<Conv2dKernel> make_conv2d_reference(Device&, const Conv2dConfig&);

std::unique_ptr<LinearKernel> make_linear_dnnl(Device&, const LinearConfig&);
std::unique_ptr<LinearKernel> make_linear_reference(Device&, const LinearConfig&);

}  // namespace tandem::cpu

// Factories of the CUDA backend's kernels; register.cpp lists them all in one place.
// `cudnn`/`cublas` kernels run on those libraries, `cuda` ones on our own kernels.cu.
#pragma once

#include <memory>

#include "device/device.h"
#include "kernels/kernels.h"

namespace tandem::cuda {

std::unique_ptr<TensorOpsKernel> make_tensor_ops_cuda(Device&, const TensorOpsConfig&);
// cuDNN for ReLU, sigmoid and tanh, our kernel for leaky ReLU and GELU.
std::unique_ptr<ActivationKernel> make_activation_cuda(Device&, const ActivationConfig&);
std::unique_ptr<DropoutKernel> make_dropout_cuda(Device&, const DropoutConfig&);
std::unique_ptr<ElementLossKernel> make_element_loss_cuda(Device&, const ElementLossConfig&);
std::unique_ptr<RnnCellKernel> make_rnn_cell_cuda(Device&, const RnnCellConfig&);
// LSTM and GRU stacks over whole sequences on cuDNN's RNN API.
std::unique_ptr<RnnSequenceKernel> make_rnn_cudnn(Device&, const RnnSequenceConfig&);
std::unique_ptr<SoftmaxKernel> make_softmax_cuda(Device&, const SoftmaxConfig&);
std::unique_ptr<EmbeddingKernel> make_embedding_cuda(Device&, const EmbeddingConfig&);
std::unique_ptr<LayerNormKernel> make_layer_norm_cuda(Device&, const LayerNormConfig&);
std::unique_ptr<SoftmaxCrossEntropyKernel> make_softmax_cross_entropy_cudnn(
    Device&, const SoftmaxCrossEntropyConfig&);
std::unique_ptr<BatchNormKernel> make_batch_norm_cudnn(Device&, const BatchNormConfig&);
std::unique_ptr<Pool2dKernel> make_pool2d_cuda(Device&, const Pool2dConfig&);
// cuDNN where it computes PyTorch's LRN, our kernel for the other windows.
std::unique_ptr<LrnKernel> make_lrn_cuda(Device&, const LrnConfig&);
std::unique_ptr<Conv2dKernel> make_conv2d_cudnn(Device&, const Conv2dConfig&);
std::unique_ptr<LinearKernel> make_linear_cublas(Device&, const LinearConfig&);

}  // namespace tandem::cuda

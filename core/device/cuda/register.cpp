// The CUDA backend's menu: one kernel per kind, every kind the CPU backend offers, and the
// optional whole-sequence recurrent kernel (cuDNN's RNN API), which the CPU does not.
#include "device/cuda/attention_cuda.h"
#include "device/cuda/kernels_cuda.h"
#include "kernels/registry.h"

namespace tandem {

void register_cuda_kernels(KernelRegistry& r) {
    using namespace cuda;
    constexpr auto kCuda = DeviceKind::cuda;
    r.add<TensorOpsKernel>(kCuda, "cuda", make_tensor_ops_cuda);
    r.add<ActivationKernel>(kCuda, "cuda", make_activation_cuda);
    r.add<DropoutKernel>(kCuda, "cuda", make_dropout_cuda);
    r.add<SoftmaxCrossEntropyKernel>(kCuda, "cudnn", make_softmax_cross_entropy_cudnn);
    r.add<ElementLossKernel>(kCuda, "cuda", make_element_loss_cuda);
    r.add<RnnCellKernel>(kCuda, "cuda", make_rnn_cell_cuda);
    // Optional kind (kernels.h): the recurrent layer runs whole sequences on it where offered.
    r.add<RnnSequenceKernel>(kCuda, "cudnn", make_rnn_cudnn);
    r.add<SoftmaxKernel>(kCuda, "cuda", make_softmax_cuda);
    r.add<EmbeddingKernel>(kCuda, "cuda", make_embedding_cuda);
    r.add<LayerNormKernel>(kCuda, "cuda", make_layer_norm_cuda);
    r.add<AttentionKernel>(kCuda, "cuda", make_attention_cuda);
    r.add<BatchNormKernel>(kCuda, "cudnn", make_batch_norm_cudnn);
    // Pooling on our kernels: the contract keeps argmax indices for backward, while
    // cudnnPoolingBackward needs the layer's input and output, which backward is not given.
    r.add<Pool2dKernel>(kCuda, "cuda", make_pool2d_cuda);
    r.add<LrnKernel>(kCuda, "cuda", make_lrn_cuda);
    r.add<Conv2dKernel>(kCuda, "cudnn", make_conv2d_cudnn);
    r.add<LinearKernel>(kCuda, "cublas", make_linear_cublas);
}

}  // namespace tandem

// The CPU backend's menu: every kernel it offers, fastest first (the first is the default).
#include "device/cpu/attention_cpu.h"
#include "device/cpu/kernels_cpu.h"
#include "kernels/registry.h"

namespace tandem {
namespace {

// Our own convolutions compute in float32 only: asked for another precision they say so,
// naming themselves, rather than computing in float32 unasked.
KernelRegistry::Factory<Conv2dKernel> fp32_only(std::string impl,
                                                KernelRegistry::Factory<Conv2dKernel> make) {
    return [impl = std::move(impl), make = std::move(make)](Device& device,
                                                            const Conv2dConfig& config) {
        TANDEM_CHECK_AS(ConfigError, config.precision == Precision::fp32)
            << "the '" << impl << "' convolution computes in fp32 only, not "
            << precision_name(config.precision)
            << " (the 'dnnl' and 'reference' ones compute in both)";
        return make(device, config);
    };
}

}  // namespace

void register_cpu_kernels(KernelRegistry& r) {
    using namespace cpu;
    constexpr auto kCpu = DeviceKind::cpu;
    r.add<TensorOpsKernel>(kCpu, "cpu", make_tensor_ops_cpu);

    r.add<ActivationKernel>(kCpu, "dnnl", make_activation_dnnl);
    r.add<ActivationKernel>(kCpu, "reference", make_activation_reference);

    // Plain loops are both the fast kernel and the oracle; the second name lets a whole net
    // run with set_kernel_impl("reference").
    r.add<DropoutKernel>(kCpu, "cpu", make_dropout_cpu);
    r.add<DropoutKernel>(kCpu, "reference", make_dropout_cpu);

    r.add<SoftmaxCrossEntropyKernel>(kCpu, "cpu", make_softmax_cross_entropy_cpu);
    r.add<ElementLossKernel>(kCpu, "cpu", make_element_loss_cpu);
    r.add<RnnCellKernel>(kCpu, "cpu", make_rnn_cell_cpu);
    r.add<RnnCellKernel>(kCpu, "reference", make_rnn_cell_cpu);
    r.add<EmbeddingKernel>(kCpu, "cpu", make_embedding_cpu);
    r.add<EmbeddingKernel>(kCpu, "reference", make_embedding_cpu);
    r.add<SoftmaxKernel>(kCpu, "cpu", make_softmax_cpu);
    r.add<SoftmaxKernel>(kCpu, "reference", make_softmax_cpu);
    r.add<LayerNormKernel>(kCpu, "cpu", make_layer_norm_cpu);
    r.add<LayerNormKernel>(kCpu, "reference", make_layer_norm_cpu);
    r.add<AttentionKernel>(kCpu, "cpu", make_attention_cpu);
    r.add<AttentionKernel>(kCpu, "reference", make_attention_cpu);

    // Channels-last on our own loops, other layouts on oneDNN (batch_norm_nhwc.cpp).
    r.add<BatchNormKernel>(kCpu, "cpu", make_batch_norm_cpu);
    r.add<BatchNormKernel>(kCpu, "dnnl", make_batch_norm_dnnl);
    r.add<BatchNormKernel>(kCpu, "reference", make_batch_norm_reference);
    // No reference: a layer held to the reference kernels runs its ReLU apart.
    r.add<BatchNormReluKernel>(kCpu, "cpu", make_batch_norm_relu_cpu);
    r.add<BatchNormReluKernel>(kCpu, "dnnl", make_batch_norm_relu_dnnl);

    r.add<Pool2dKernel>(kCpu, "cpu", make_pool2d_cpu);
    r.add<Pool2dKernel>(kCpu, "dnnl", make_pool2d_dnnl);
    r.add<Pool2dKernel>(kCpu, "reference", make_pool2d_reference);

    r.add<LrnKernel>(kCpu, "dnnl", make_lrn_dnnl);
    r.add<LrnKernel>(kCpu, "reference", make_lrn_reference);

    r.add<Conv2dKernel>(kCpu, "cpu", make_conv2d_cpu);
    r.add<Conv2dKernel>(kCpu, "winograd", fp32_only("winograd", make_conv2d_winograd));
    r.add<Conv2dKernel>(kCpu, "thin_input", fp32_only("thin_input", make_conv2d_thin_input));
    r.add<Conv2dKernel>(kCpu, "gemm", fp32_only("gemm", make_conv2d_gemm));
    r.add<Conv2dKernel>(kCpu, "dnnl", make_conv2d_dnnl);
    r.add<Conv2dKernel>(kCpu, "reference", make_conv2d_reference);

    r.add<LinearKernel>(kCpu, "dnnl", make_linear_dnnl);
    r.add<LinearKernel>(kCpu, "reference", make_linear_reference);
}

}  // namespace tandem

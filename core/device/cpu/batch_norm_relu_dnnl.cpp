// Batch normalisation with the ReLU after it, on oneDNN's batch_normalization primitive with
// fuse_norm_relu: forward writes the ReLU's output and a mask of where it passed, backward masks
// the gradient as it reads it. The separate ReLU costs a pass over the activation each way and
// keeps the normalised tensor alive for backward; fused, neither happens.
#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

using prop = dnnl::prop_kind;
using flags = dnnl::normalization_flags;

class BatchNormReluDnnl final : public BatchNormReluKernel {
public:
    BatchNormReluDnnl(Device& device, const BatchNormConfig& config)
        : device_(as_cpu(device)), channels_(config.c) {
        TANDEM_CHECK(config.training) << "BatchNorm2d+ReLU is fused for training only";
        auto& engine = device_.dnnl_engine();
        const auto data = plain_desc({config.n, config.c, config.h, config.w}, config.layout);
        const auto f = flags::use_scale | flags::use_shift | flags::fuse_norm_relu;
        dnnl_call("batch_normalization_forward (fused ReLU)", [&] {
            const dnnl::batch_normalization_forward::primitive_desc forward_pd(
                {prop::forward_training, data, config.epsilon, f}, engine);
            forward_ = dnnl::batch_normalization_forward(forward_pd);
            backward_ = dnnl::batch_normalization_backward(
                dnnl::batch_normalization_backward::primitive_desc(
                    {prop::backward, data, data, config.epsilon, f}, engine, forward_pd));
            workspace_desc_ = forward_pd.workspace_desc();
        });
    }

    std::size_t workspace_bytes() const override { return workspace_desc_.get_size(); }

    void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& mean,
                 Tensor& variance, Tensor& dst, Tensor& workspace) override {
        auto& engine = device_.dnnl_engine();
        execute(device_, forward_,
                {{DNNL_ARG_SRC, memory_of(src, engine)},
                 {DNNL_ARG_SCALE, memory_of(gamma, engine)},
                 {DNNL_ARG_SHIFT, memory_of(beta, engine)},
                 {DNNL_ARG_MEAN, memory_of(mean, engine)},
                 {DNNL_ARG_VARIANCE, memory_of(variance, engine)},
                 {DNNL_ARG_DST, memory_of(dst, engine)},
                 {DNNL_ARG_WORKSPACE, memory_of(workspace, workspace_desc_, engine)}},
                "batch_normalization_forward (fused ReLU)");
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                  const Tensor& mean, const Tensor& variance, const Tensor& workspace,
                  Tensor& diff_src, Tensor& diff_gamma, Tensor& diff_beta) override {
        auto& engine = device_.dnnl_engine();
        // oneDNN overwrites the scale and shift gradients; our contract adds into them.
        Tensor scale_grad = Tensor::empty({channels_}, device_);
        Tensor shift_grad = Tensor::empty({channels_}, device_);
        execute(device_, backward_,
                {{DNNL_ARG_SRC, memory_of(src, engine)},
                 {DNNL_ARG_DIFF_DST, memory_of(diff_dst, engine)},
                 {DNNL_ARG_SCALE, memory_of(gamma, engine)},
                 {DNNL_ARG_SHIFT, memory_of(gamma, engine)},  // as in batch_norm_dnnl.cpp
                 {DNNL_ARG_MEAN, memory_of(mean, engine)},
                 {DNNL_ARG_VARIANCE, memory_of(variance, engine)},
                 {DNNL_ARG_WORKSPACE, memory_of(workspace, workspace_desc_, engine)},
                 {DNNL_ARG_DIFF_SRC, memory_of(diff_src, engine)},
                 {DNNL_ARG_DIFF_SCALE, memory_of(scale_grad, engine)},
                 {DNNL_ARG_DIFF_SHIFT, memory_of(shift_grad, engine)}},
                "batch_normalization_backward (fused ReLU)");
        add_into(diff_gamma, scale_grad);
        add_into(diff_beta, shift_grad);
    }

private:
    CpuDevice& device_;
    std::int64_t channels_;
    dnnl::batch_normalization_forward forward_;
    dnnl::batch_normalization_backward backward_;
    dnnl::memory::desc workspace_desc_;
};

}  // namespace

std::unique_ptr<BatchNormReluKernel> make_batch_norm_relu_dnnl(Device& device,
                                                               const BatchNormConfig& config) {
    return std::make_unique<BatchNormReluDnnl>(device, config);
}

}  // namespace tandem::cpu

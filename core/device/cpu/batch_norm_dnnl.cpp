// Batch normalisation on oneDNN's batch_normalization primitive, alone (BatchNormKernel) and
// with the ReLU after it (BatchNormReluKernel).
//
// oneDNN 2.6 offers separate scale and shift arguments (use_scale | use_shift), so gamma and
// beta are passed as they are, with no 2 x C "weights" copy. Evaluation uses the given
// statistics (use_global_stats); its backward treats them as constants, which needs a
// forward_training descriptor with the same flags as the backward's hint.
//
// With fuse_norm_relu, forward writes the ReLU's output and a mask of where it passed, and
// backward masks the gradient as it reads it: the separate ReLU's pass over the activation each
// way, and the normalised tensor kept for its backward, are saved.
#include <utility>

#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

using prop = dnnl::prop_kind;
using flags = dnnl::normalization_flags;

// The primitives of one configuration; `extra`: the flags beyond scale and shift.
struct BatchNormPrimitives {
    BatchNormPrimitives(CpuDevice& device, const BatchNormConfig& config, flags extra) {
        auto& engine = device.dnnl_engine();
        const auto data = plain_desc({config.n, config.c, config.h, config.w}, config.layout);
        const auto f = flags::use_scale | flags::use_shift | extra;
        dnnl_call("batch_normalization_forward", [&] {
            const dnnl::batch_normalization_forward::primitive_desc training_pd(
                {prop::forward_training, data, config.epsilon, f}, engine);
            forward = config.training
                          ? dnnl::batch_normalization_forward(training_pd)
                          : dnnl::batch_normalization_forward(
                                dnnl::batch_normalization_forward::primitive_desc(
                                    {prop::forward_inference, data, config.epsilon, f}, engine));
            backward = dnnl::batch_normalization_backward(
                dnnl::batch_normalization_backward::primitive_desc(
                    {prop::backward, data, data, config.epsilon, f}, engine, training_pd));
            workspace = training_pd.workspace_desc();
        });
    }
    dnnl::batch_normalization_forward forward;
    dnnl::batch_normalization_backward backward;
    dnnl::memory::desc workspace;  // the ReLU's mask, with fuse_norm_relu
};

dnnl_args forward_args(const dnnl::engine& engine, const Tensor& src, const Tensor& gamma,
                       const Tensor& beta, Tensor& mean, Tensor& variance, Tensor& dst) {
    return {{DNNL_ARG_SRC, memory_of(src, engine)},
            {DNNL_ARG_SCALE, memory_of(gamma, engine)},
            {DNNL_ARG_SHIFT, memory_of(beta, engine)},
            {DNNL_ARG_MEAN, memory_of(mean, engine)},
            {DNNL_ARG_VARIANCE, memory_of(variance, engine)},
            {DNNL_ARG_DST, memory_of(dst, engine)}};
}

// A backward primitive's arguments but the scale and shift gradients.
dnnl_args backward_args(const dnnl::engine& engine, const Tensor& src, const Tensor& diff_dst,
                        const Tensor& gamma, const Tensor& mean, const Tensor& variance,
                        Tensor& diff_src) {
    return {{DNNL_ARG_SRC, memory_of(src, engine)},
            {DNNL_ARG_DIFF_DST, memory_of(diff_dst, engine)},
            {DNNL_ARG_SCALE, memory_of(gamma, engine)},
            // oneDNN 2.6 counts the shift among backward's inputs although no gradient depends
            // on it; any C floats satisfy it (the reference comparison checks).
            {DNNL_ARG_SHIFT, memory_of(gamma, engine)},
            {DNNL_ARG_MEAN, memory_of(mean, engine)},
            {DNNL_ARG_VARIANCE, memory_of(variance, engine)},
            {DNNL_ARG_DIFF_SRC, memory_of(diff_src, engine)}};
}

// Runs `backward` with `args`, adding the scale and shift gradients into diff_gamma and
// diff_beta: oneDNN overwrites them, our contract adds, so they go to scratch tensors first.
void backward_adding(CpuDevice& device, const dnnl::primitive& backward, dnnl_args args,
                     Tensor& diff_gamma, Tensor& diff_beta, const char* what) {
    Tensor scale_grad = Tensor::empty(diff_gamma.shape(), device);
    Tensor shift_grad = Tensor::empty(diff_beta.shape(), device);
    args[DNNL_ARG_DIFF_SCALE] = memory_of(scale_grad, device.dnnl_engine());
    args[DNNL_ARG_DIFF_SHIFT] = memory_of(shift_grad, device.dnnl_engine());
    execute(device, backward, args, what);
    add_into(diff_gamma, scale_grad);
    add_into(diff_beta, shift_grad);
}

class BatchNormDnnl final : public BatchNormKernel {
public:
    BatchNormDnnl(Device& device, const BatchNormConfig& config)
        : device_(as_cpu(device)),
          p_(device_, config, config.training ? flags::none : flags::use_global_stats) {}

    void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& mean,
                 Tensor& variance, Tensor& dst) override {
        execute(device_, p_.forward,
                forward_args(device_.dnnl_engine(), src, gamma, beta, mean, variance, dst),
                "batch_normalization_forward");
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                  const Tensor& mean, const Tensor& variance, Tensor& diff_src, Tensor& diff_gamma,
                  Tensor& diff_beta) override {
        backward_adding(
            device_, p_.backward,
            backward_args(device_.dnnl_engine(), src, diff_dst, gamma, mean, variance, diff_src),
            diff_gamma, diff_beta, "batch_normalization_backward");
    }

private:
    CpuDevice& device_;
    BatchNormPrimitives p_;
};

class BatchNormReluDnnl final : public BatchNormReluKernel {
public:
    BatchNormReluDnnl(Device& device, const BatchNormConfig& config)
        : device_(as_cpu(device)), p_(device_, config, flags::fuse_norm_relu) {
        TANDEM_CHECK(config.training) << "BatchNorm2d+ReLU is fused for training only";
    }

    std::size_t workspace_bytes() const override { return p_.workspace.get_size(); }

    void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& mean,
                 Tensor& variance, Tensor& dst, Tensor& workspace) override {
        auto& engine = device_.dnnl_engine();
        dnnl_args args = forward_args(engine, src, gamma, beta, mean, variance, dst);
        args[DNNL_ARG_WORKSPACE] = memory_of(workspace, p_.workspace, engine);
        execute(device_, p_.forward, args, "batch_normalization_forward (fused ReLU)");
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                  const Tensor& mean, const Tensor& variance, const Tensor& workspace,
                  Tensor& diff_src, Tensor& diff_gamma, Tensor& diff_beta) override {
        auto& engine = device_.dnnl_engine();
        dnnl_args args = backward_args(engine, src, diff_dst, gamma, mean, variance, diff_src);
        args[DNNL_ARG_WORKSPACE] = memory_of(workspace, p_.workspace, engine);
        backward_adding(device_, p_.backward, std::move(args), diff_gamma, diff_beta,
                        "batch_normalization_backward (fused ReLU)");
    }

private:
    CpuDevice& device_;
    BatchNormPrimitives p_;
};

}  // namespace

std::unique_ptr<BatchNormKernel> make_batch_norm_dnnl(Device& device,
                                                      const BatchNormConfig& config) {
    return std::make_unique<BatchNormDnnl>(device, config);
}

std::unique_ptr<BatchNormReluKernel> make_batch_norm_relu_dnnl(Device& device,
                                                               const BatchNormConfig& config) {
    return std::make_unique<BatchNormReluDnnl>(device, config);
}

}  // namespace tandem::cpu

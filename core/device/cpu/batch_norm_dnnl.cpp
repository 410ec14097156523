// Batch normalisation on oneDNN's batch_normalization primitive.
//
// oneDNN 2.6 offers separate scale and shift arguments (use_scale | use_shift), so gamma and
// beta are passed as they are, with no 2 x C "weights" copy. Evaluation uses the given
// statistics (use_global_stats); its backward treats them as constants, which needs a
// forward_training descriptor with the same flags as the backward's hint.
#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

using prop = dnnl::prop_kind;
using flags = dnnl::normalization_flags;

class BatchNormDnnl final : public BatchNormKernel {
public:
    BatchNormDnnl(Device& device, const BatchNormConfig& config)
        : device_(as_cpu(device)), channels_(config.c) {
        auto& engine = device_.dnnl_engine();
        const auto data = plain_desc({config.n, config.c, config.h, config.w}, config.layout);
        auto f = flags::use_scale | flags::use_shift;
        if (!config.training) f = f | flags::use_global_stats;
        dnnl_call("batch_normalization_forward", [&] {
            const auto training_pd = dnnl::batch_normalization_forward::primitive_desc(
                {prop::forward_training, data, config.epsilon, f}, engine);
            forward_ = config.training
                           ? dnnl::batch_normalization_forward(training_pd)
                           : dnnl::batch_normalization_forward(
                                 dnnl::batch_normalization_forward::primitive_desc(
                                     {prop::forward_inference, data, config.epsilon, f}, engine));
            backward_ = dnnl::batch_normalization_backward(
                dnnl::batch_normalization_backward::primitive_desc(
                    {prop::backward, data, data, config.epsilon, f}, engine, training_pd));
        });
    }

    void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& mean,
                 Tensor& variance, Tensor& dst) override {
        auto& engine = device_.dnnl_engine();
        execute(device_, forward_,
                {{DNNL_ARG_SRC, memory_of(src, engine)},
                 {DNNL_ARG_SCALE, memory_of(gamma, engine)},
                 {DNNL_ARG_SHIFT, memory_of(beta, engine)},
                 {DNNL_ARG_MEAN, memory_of(mean, engine)},
                 {DNNL_ARG_VARIANCE, memory_of(variance, engine)},
                 {DNNL_ARG_DST, memory_of(dst, engine)}},
                "batch_normalization_forward");
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                  const Tensor& mean, const Tensor& variance, Tensor& diff_src, Tensor& diff_gamma,
                  Tensor& diff_beta) override {
        auto& engine = device_.dnnl_engine();
        // oneDNN overwrites the scale and shift gradients; our contract adds into them.
        Tensor scale_grad = Tensor::empty({channels_}, device_);
        Tensor shift_grad = Tensor::empty({channels_}, device_);
        execute(device_, backward_,
                {{DNNL_ARG_SRC, memory_of(src, engine)},
                 {DNNL_ARG_DIFF_DST, memory_of(diff_dst, engine)},
                 {DNNL_ARG_SCALE, memory_of(gamma, engine)},
                 // oneDNN 2.6 counts the shift among backward's inputs although no gradient
                 // depends on it; any C floats satisfy it (the reference comparison checks).
                 {DNNL_ARG_SHIFT, memory_of(gamma, engine)},
                 {DNNL_ARG_MEAN, memory_of(mean, engine)},
                 {DNNL_ARG_VARIANCE, memory_of(variance, engine)},
                 {DNNL_ARG_DIFF_SRC, memory_of(diff_src, engine)},
                 {DNNL_ARG_DIFF_SCALE, memory_of(scale_grad, engine)},
                 {DNNL_ARG_DIFF_SHIFT, memory_of(shift_grad, engine)}},
                "batch_normalization_backward");
        add_into(diff_gamma, scale_grad);
        add_into(diff_beta, shift_grad);
    }

private:
    CpuDevice& device_;
    std::int64_t channels_;
    dnnl::batch_normalization_forward forward_;
    dnnl::batch_normalization_backward backward_;
};

}  // namespace

std::unique_ptr<BatchNormKernel> make_batch_norm_dnnl(Device& device,
                                                      const BatchNormConfig& config) {
    return std::make_unique<BatchNormDnnl>(device, config);
}

}  // namespace tandem::cpu

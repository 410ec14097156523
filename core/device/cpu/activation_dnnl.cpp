// Element-wise activations on oneDNN's eltwise primitive. ReLU, sigmoid and tanh use the
// *_use_dst_for_bwd algorithms: their backward reads forward's output, which the next layer
// holds anyway, so the layer keeps no tensor of its own; GELU and leaky ReLU read the input.
#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

using prop = dnnl::prop_kind;
using algo = dnnl::algorithm;

// oneDNN's algorithm for ours; it must agree with activation_backward_uses_dst.
algo dnnl_algorithm(ActivationAlgorithm a) {
    switch (a) {
        case ActivationAlgorithm::relu: return algo::eltwise_relu_use_dst_for_bwd;
        case ActivationAlgorithm::leaky_relu: return algo::eltwise_relu;  // alpha: the slope
        case ActivationAlgorithm::sigmoid: return algo::eltwise_logistic_use_dst_for_bwd;
        case ActivationAlgorithm::tanh: return algo::eltwise_tanh_use_dst_for_bwd;
        case ActivationAlgorithm::gelu_erf: return algo::eltwise_gelu_erf;
        case ActivationAlgorithm::gelu_tanh: return algo::eltwise_gelu_tanh;
    }
    throw ConfigError("oneDNN eltwise: unknown activation algorithm");
}

class ActivationDnnl final : public ActivationKernel {
public:
    ActivationDnnl(Device& device, const ActivationConfig& config)
        : device_(as_cpu(device)),
          what_(std::string("eltwise (") + activation_name(config.algorithm) + ")"),
          saved_arg_(activation_backward_uses_dst(config.algorithm) ? DNNL_ARG_DST : DNNL_ARG_SRC) {
        auto& engine = device_.dnnl_engine();
        const auto desc = plain_desc(config.shape, config.layout);
        const algo a = dnnl_algorithm(config.algorithm);
        dnnl_call(what_, [&] {
            // oneDNN 2.x: an operation descriptor, then a primitive descriptor on the engine.
            forward_pd_ = dnnl::eltwise_forward::primitive_desc(
                {prop::forward_training, a, desc, config.alpha, 0.f}, engine);
            forward_ = dnnl::eltwise_forward(forward_pd_);
            auto backward_pd = dnnl::eltwise_backward::primitive_desc(
                {a, desc, desc, config.alpha, 0.f}, engine, forward_pd_);
            backward_ = dnnl::eltwise_backward(backward_pd);
        });
    }

    void forward(const Tensor& src, Tensor& dst) override {
        auto& engine = device_.dnnl_engine();
        execute(device_, forward_,
                {{DNNL_ARG_SRC, memory_of(src, engine)}, {DNNL_ARG_DST, memory_of(dst, engine)}},
                what_ + " forward");
    }

    void backward(const Tensor& saved, const Tensor& diff_dst, Tensor& diff_src) override {
        auto& engine = device_.dnnl_engine();
        execute(device_, backward_,
                {{saved_arg_, memory_of(saved, engine)},
                 {DNNL_ARG_DIFF_DST, memory_of(diff_dst, engine)},
                 {DNNL_ARG_DIFF_SRC, memory_of(diff_src, engine)}},
                what_ + " backward");
    }

private:
    CpuDevice& device_;
    std::string what_;
    int saved_arg_;
    dnnl::eltwise_forward::primitive_desc forward_pd_;
    dnnl::eltwise_forward forward_;
    dnnl::eltwise_backward backward_;
};

}  // namespace

std::unique_ptr<ActivationKernel> make_activation_dnnl(Device& device,
                                                       const ActivationConfig& config) {
    return std::make_unique<ActivationDnnl>(device, config);
}

}  // namespace tandem::cpu

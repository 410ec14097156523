// ReLU on oneDNN's eltwise primitive; backward from dst, so the input need not be kept.
#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

using prop = dnnl::prop_kind;
using algo = dnnl::algorithm;

class ReluDnnl final : public ReluKernel {
public:
    ReluDnnl(Device& device, const ReluConfig& config) : device_(as_cpu(device)) {
        auto& engine = device_.dnnl_engine();
        const auto desc = plain_desc(config.shape, config.layout);
        dnnl_call("eltwise_forward (relu)", [&] {
            // oneDNN 2.x: an operation descriptor, then a primitive descriptor on the engine.
            forward_pd_ = dnnl::eltwise_forward::primitive_desc(
                {prop::forward_training, algo::eltwise_relu_use_dst_for_bwd, desc, 0.f, 0.f},
                engine);
            forward_ = dnnl::eltwise_forward(forward_pd_);
            auto backward_pd = dnnl::eltwise_backward::primitive_desc(
                {algo::eltwise_relu_use_dst_for_bwd, desc, desc, 0.f, 0.f}, engine, forward_pd_);
            backward_ = dnnl::eltwise_backward(backward_pd);
        });
    }

    void forward(const Tensor& src, Tensor& dst) override {
        auto& engine = device_.dnnl_engine();
        execute(device_, forward_,
                {{DNNL_ARG_SRC, memory_of(src, engine)}, {DNNL_ARG_DST, memory_of(dst, engine)}},
                "eltwise_forward (relu)");
    }

    void backward(const Tensor& dst, const Tensor& diff_dst, Tensor& diff_src) override {
        auto& engine = device_.dnnl_engine();
        execute(device_, backward_,
                {{DNNL_ARG_DST, memory_of(dst, engine)},
                 {DNNL_ARG_DIFF_DST, memory_of(diff_dst, engine)},
                 {DNNL_ARG_DIFF_SRC, memory_of(diff_src, engine)}},
                "eltwise_backward (relu)");
    }

private:
    CpuDevice& device_;
    dnnl::eltwise_forward::primitive_desc forward_pd_;
    dnnl::eltwise_forward forward_;
    dnnl::eltwise_backward backward_;
};

}  // namespace

std::unique_ptr<ReluKernel> make_relu_dnnl(Device& device, const ReluConfig& config) {
    return std::make_unique<ReluDnnl>(device, config);
}

}  // namespace tandem::cpu

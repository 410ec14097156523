// Local response normalisation across channels on oneDNN's lrn primitive.
//
// oneDNN's lrn_across_channels computes dst = src / (k + alpha / size * sum src^2)^beta over
// a window of `size` channels centred on each one: the same alpha convention as PyTorch and
// Caffe (alpha divided by the window size, never by the clipped count at the edges).
// test_lrn.cpp holds it to the reference kernel.
#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

using prop = dnnl::prop_kind;
using algo = dnnl::algorithm;

class LrnDnnl final : public LrnKernel {
public:
    LrnDnnl(Device& device, const LrnConfig& c) : device_(as_cpu(device)) {
        auto& engine = device_.dnnl_engine();
        const auto data = plain_desc({c.n, c.c, c.h, c.w}, c.layout);
        // oneDNN 2.6 crashes building its AVX-512 channels_last backward for a window of one
        // channel. A window of one is also a 1 x 1 spatial window (alpha / 1^2), so that case
        // runs as within_channel, which computes the same values.
        const auto a = c.size == 1 ? algo::lrn_within_channel : algo::lrn_across_channels;
        dnnl_call("lrn_forward", [&] {
            const auto training_pd = dnnl::lrn_forward::primitive_desc(
                {prop::forward_training, a, data, c.size, c.alpha, c.beta, c.k}, engine);
            training_ = dnnl::lrn_forward(training_pd);
            inference_ = dnnl::lrn_forward(dnnl::lrn_forward::primitive_desc(
                {prop::forward_inference, a, data, c.size, c.alpha, c.beta, c.k}, engine));
            backward_ = dnnl::lrn_backward(dnnl::lrn_backward::primitive_desc(
                {a, data, data, c.size, c.alpha, c.beta, c.k}, engine, training_pd));
            workspace_desc_ = training_pd.workspace_desc();
        });
    }

    std::size_t workspace_bytes() const override { return workspace_desc_.get_size(); }

    void forward(const Tensor& src, Tensor& dst, Tensor& workspace) override {
        auto& engine = device_.dnnl_engine();
        dnnl_args args{{DNNL_ARG_SRC, memory_of(src, engine)},
                       {DNNL_ARG_DST, memory_of(dst, engine)}};
        const bool training = workspace.defined() && workspace_bytes() > 0;
        if (training) args[DNNL_ARG_WORKSPACE] = memory_of(workspace, workspace_desc_, engine);
        execute(device_, training ? training_ : inference_, args, "lrn_forward");
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& workspace,
                  Tensor& diff_src) override {
        auto& engine = device_.dnnl_engine();
        dnnl_args args{{DNNL_ARG_SRC, memory_of(src, engine)},
                       {DNNL_ARG_DIFF_DST, memory_of(diff_dst, engine)},
                       {DNNL_ARG_DIFF_SRC, memory_of(diff_src, engine)}};
        if (workspace_bytes() > 0) {
            TANDEM_CHECK(workspace.defined())
                << "LRN backward needs the workspace of a training forward";
            args[DNNL_ARG_WORKSPACE] = memory_of(workspace, workspace_desc_, engine);
        }
        execute(device_, backward_, args, "lrn_backward");
    }

private:
    CpuDevice& device_;
    dnnl::lrn_forward training_;
    dnnl::lrn_forward inference_;
    dnnl::lrn_backward backward_;
    dnnl::memory::desc workspace_desc_;
};

}  // namespace

std::unique_ptr<LrnKernel> make_lrn_dnnl(Device& device, const LrnConfig& config) {
    return std::make_unique<LrnDnnl>(device, config);
}

}  // namespace tandem::cpu

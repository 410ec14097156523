// Max and average pooling on oneDNN's pooling primitive.
//
// ceil_mode becomes a larger right padding, so the last (partial) window exists. For max
// pooling that padding is -inf to oneDNN and changes nothing else. For average pooling that
// counts padding, PyTorch and Caffe divide a window by its size clipped to input + padding,
// while oneDNN divides by kernel_h * kernel_w everywhere; the kernel rescales the outputs of
// those windows (and the gradient flowing into them) by kernel area / clipped area.
#include <algorithm>
#include <vector>

#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

using prop = dnnl::prop_kind;
using algo = dnnl::algorithm;
using dims = dnnl::memory::dims;

// The right padding that makes oneDNN's floor formula give `out`.
std::int64_t right_pad(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                       std::int64_t out) {
    return std::max(pad, (out - 1) * stride + kernel - in - pad);
}

// kernel / (window size clipped to in + pad) for each output position along one axis.
std::vector<float> edge_scale(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                              std::int64_t pad, std::int64_t out) {
    std::vector<float> scale(static_cast<std::size_t>(out));
    for (std::int64_t o = 0; o < out; ++o) {
        const std::int64_t start = o * stride - pad;
        const std::int64_t end = std::min(start + kernel, in + pad);
        scale[static_cast<std::size_t>(o)] = float(kernel) / float(end - start);
    }
    return scale;
}

class Pool2dDnnl final : public Pool2dKernel {
public:
    Pool2dDnnl(Device& device, const Pool2dConfig& c)
        : device_(as_cpu(device)), config_(c), out_h_(c.out_h()), out_w_(c.out_w()) {
        auto& engine = device_.dnnl_engine();
        const auto src = plain_desc({c.n, c.c, c.h, c.w}, c.layout);
        const auto dst = plain_desc({c.n, c.c, out_h_, out_w_}, c.layout);
        const dims strides{c.stride_h, c.stride_w}, kernel{c.kernel_h, c.kernel_w};
        const dims pad_l{c.pad_h, c.pad_w};
        const dims pad_r{right_pad(c.h, c.kernel_h, c.stride_h, c.pad_h, out_h_),
                         right_pad(c.w, c.kernel_w, c.stride_w, c.pad_w, out_w_)};
        const algo a = c.kind == PoolKind::max ? algo::pooling_max
                       : c.count_include_pad   ? algo::pooling_avg_include_padding
                                               : algo::pooling_avg_exclude_padding;
        dnnl_call("pooling_forward", [&] {
            const auto training_pd = dnnl::pooling_forward::primitive_desc(
                {prop::forward_training, a, src, dst, strides, kernel, pad_l, pad_r}, engine);
            training_ = dnnl::pooling_forward(training_pd);
            inference_ = dnnl::pooling_forward(dnnl::pooling_forward::primitive_desc(
                {prop::forward_inference, a, src, dst, strides, kernel, pad_l, pad_r}, engine));
            backward_ = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(
                {a, src, dst, strides, kernel, pad_l, pad_r}, engine, training_pd));
            workspace_desc_ = training_pd.workspace_desc();
        });
        if (c.kind == PoolKind::average && c.count_include_pad) {
            row_scale_ = edge_scale(c.h, c.kernel_h, c.stride_h, c.pad_h, out_h_);
            col_scale_ = edge_scale(c.w, c.kernel_w, c.stride_w, c.pad_w, out_w_);
            auto is_one = [](float s) { return s == 1.f; };
            rescale_ = !std::all_of(row_scale_.begin(), row_scale_.end(), is_one) ||
                       !std::all_of(col_scale_.begin(), col_scale_.end(), is_one);
        }
    }

    std::size_t workspace_bytes() const override {
        return config_.kind == PoolKind::max ? workspace_desc_.get_size() : 0;
    }

    void forward(const Tensor& src, Tensor& dst, Tensor& workspace) override {
        auto& engine = device_.dnnl_engine();
        dnnl_args args{{DNNL_ARG_SRC, memory_of(src, engine)},
                       {DNNL_ARG_DST, memory_of(dst, engine)}};
        const bool training = workspace.defined() && workspace_bytes() > 0;
        if (training) args[DNNL_ARG_WORKSPACE] = memory_of(workspace, workspace_desc_, engine);
        execute(device_, training ? training_ : inference_, args, "pooling_forward");
        if (rescale_) rescale(dst);
    }

    void backward(const Tensor& diff_dst, const Tensor& workspace, Tensor& diff_src) override {
        auto& engine = device_.dnnl_engine();
        Tensor scaled;
        if (rescale_) {
            scaled = diff_dst.clone();
            rescale(scaled);
        }
        dnnl_args args{{DNNL_ARG_DIFF_DST, memory_of(rescale_ ? scaled : diff_dst, engine)},
                       {DNNL_ARG_DIFF_SRC, memory_of(diff_src, engine)}};
        if (workspace_bytes() > 0) {
            TANDEM_CHECK(workspace.defined())
                << "max pooling backward needs the workspace of a training forward";
            args[DNNL_ARG_WORKSPACE] = memory_of(workspace, workspace_desc_, engine);
        }
        execute(device_, backward_, args, "pooling_backward");
    }

private:
    void rescale(Tensor& t) const {
        float* v = t.data<float>();
        const auto s = t.strides();
        for (std::int64_t n = 0; n < config_.n; ++n)
            for (std::int64_t c = 0; c < config_.c; ++c)
                for (std::int64_t h = 0; h < out_h_; ++h)
                    for (std::int64_t w = 0; w < out_w_; ++w)
                        v[n * s[0] + c * s[1] + h * s[2] + w * s[3]] *=
                            row_scale_[std::size_t(h)] * col_scale_[std::size_t(w)];
    }

    CpuDevice& device_;
    Pool2dConfig config_;
    std::int64_t out_h_, out_w_;
    dnnl::pooling_forward training_;
    dnnl::pooling_forward inference_;
    dnnl::pooling_backward backward_;
    dnnl::memory::desc workspace_desc_;
    bool rescale_ = false;
    std::vector<float> row_scale_, col_scale_;
};

}  // namespace

std::unique_ptr<Pool2dKernel> make_pool2d_dnnl(Device& device, const Pool2dConfig& config) {
    return std::make_unique<Pool2dDnnl>(device, config);
}

}  // namespace tandem::cpu

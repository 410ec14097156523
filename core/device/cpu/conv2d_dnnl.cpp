// Conv2d on oneDNN's convolution primitives.
//
// Activations: the primitives choose their format (dnnl_activation.h), and the net's plain
// tensors (nchw, or nhwc for channels_last) are reordered into it and out of it around each
// call. On AlexNet's 3x3 and 5x5 layers oneDNN 2.6's channel-blocked AVX2 kernels took about
// 0.7x the time of its nhwc ones, forward and backward, and the reorders a few percent of
// that. A chosen format that pads the channels (20 channels in blocks of 8, say) is declined:
// LeNet-5's thin layers ran 25% slower whole-step with it. Weights are reordered too: each
// primitive picks its weights format (format_tag::any), and our plain oihw (goihw with groups)
// weights are reordered into a buffer the kernel allocates once from the device's allocator.
// oneDNN's backward_weights overwrites its destination while our contract adds, so it writes into a
// scratch buffer that is added back into the plain gradient: by a reorder with a sum post-op when
// the primitive chose a blocked format (one pass), by a vector loop when it chose the plain one.
// In bf16 (device/precision.h) the primitives read bfloat16 activations, weights and incoming
// gradients and write float32: the reorders into their formats convert as they go (the chosen
// format differs from ours in type, so every such argument is reordered), and the weights'
// gradient is float32 as before.
#include <algorithm>
#include <string_view>

#include "device/cpu/dnnl_activation.h"
#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using algo = dnnl::algorithm;

// Our weights as oneDNN sees them: oihw, or goihw (the same bytes) when grouped.
dnnl::memory::desc weights_desc(const Conv2dConfig& c, tag format, dt type = dt::f32) {
    if (c.groups == 1) return {{c.out_channels, c.c, c.kernel_h, c.kernel_w}, type, format};
    return {{c.groups, c.out_channels / c.groups, c.c / c.groups, c.kernel_h, c.kernel_w},
            type,
            format == tag::any ? tag::any : tag::goihw};
}

// What the primitives read activations, weights and incoming gradients in.
dt operand_type(const Conv2dConfig& c) {
    return c.precision == Precision::bf16 ? dt::bf16 : dt::f32;
}

// A buffer in a primitive's chosen weights format: a tensor from the device's allocator,
// so the kernel's memory counts against the device's cap like any other.
struct WeightsBuffer {
    Tensor storage;
    dnnl::memory memory;
};

WeightsBuffer make_buffer(Device& device, const dnnl::memory::desc& desc,
                          const dnnl::engine& engine) {
    WeightsBuffer b;
    // f32 elements, so that a buffer in the plain format can be added as a tensor (rounded up:
    // a bf16 buffer may hold an odd number of elements).
    const auto floats =
        static_cast<std::int64_t>((desc.get_size() + sizeof(float) - 1) / sizeof(float));
    b.storage = Tensor::empty({floats}, device);
    b.memory = dnnl::memory(desc, engine, b.storage.raw());
    return b;
}

// oneDNN 2.6's jit_1x1 backward-weights kernel (seen on avx2) computes wrong gradients and
// writes past its buffers for a strided 1x1 convolution over a thin input (fewer than 8
// channels a group; up to 16 kept out, the avx512 vector width): its "reduce to unit stride"
// copy of the input is sized for a full vector of channels. A ResNet's projection shortcut
// on a 4-channel stage hits it. Such a convolution takes the next implementation instead.
bool faulty_backward_weights(const Conv2dConfig& c, std::string_view impl) {
    const bool strided_1x1 =
        c.kernel_h == 1 && c.kernel_w == 1 && (c.stride_h > 1 || c.stride_w > 1);
    return strided_1x1 && c.c / c.groups < 16 && impl.starts_with("jit_1x1");
}

// The first implementation of `make(weights)`'s iterator that `usable` accepts, with weights
// in any format, else in `fallback` (plain weights, which the gemm and reference kernels
// take). A fresh descriptor is walked for each candidate: in oneDNN 2.6 reading
// impl_info_str() stops next_impl().
template <class Make, class Usable>
auto first_usable_impl(Make make, Usable usable, const dnnl::memory::desc& any,
                       const dnnl::memory::desc& fallback) {
    for (const auto& weights : {any, fallback}) {
        for (int skip = 0;; ++skip) {
            auto pd = make(weights);
            bool more = true;
            for (int i = 0; i < skip && more; ++i) more = pd.next_impl();
            if (!more) break;
            if (usable(std::string_view(pd.impl_info_str()))) return pd;
        }
    }
    TANDEM_THROW(BackendError) << "oneDNN has no sound implementation for this convolution";
}

class Conv2dDnnl final : public Conv2dKernel {
public:
    Conv2dDnnl(Device& device, const Conv2dConfig& c) : device_(as_cpu(device)), config_(c) {
        dnnl_call("convolution (build)", [&] { build(device); });
    }

    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        place_scratch();
        dnnl_args args{{DNNL_ARG_SRC, forward_src_.read(device_, src)},
                       {DNNL_ARG_WEIGHTS, weights_for(weights, forward_weights_, to_forward_)},
                       {DNNL_ARG_DST, forward_dst_.at(dst)}};
        if (config_.bias) {
            bias_.set_data_handle(bias.raw());
            args.emplace(DNNL_ARG_BIAS, bias_);
        }
        execute(device_, forward_, args, "convolution_forward");
        forward_dst_.finish(device_);
    }

    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        place_scratch();
        data_with(data_diff_dst_.read(device_, diff_dst), weights, diff_src);
    }

    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        place_scratch();
        weights_with(src, weights_diff_dst_.read(device_, diff_dst), diff_weights, diff_bias);
    }

    // The weights' gradient reorders diff_dst into the output side of the scratch; where the
    // input's gradient reads the same format from there, it reads it again as it is.
    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& weights,
                  Tensor& diff_src, Tensor& diff_weights, Tensor& diff_bias) override {
        place_scratch();
        weights_with(src, weights_diff_dst_.read(device_, diff_dst), diff_weights, diff_bias);
        data_with(
            same_diff_dst_ ? data_diff_dst_.at(diff_dst) : data_diff_dst_.read(device_, diff_dst),
            weights, diff_src);
    }

private:
    void data_with(dnnl::memory& diff_dst, const Tensor& weights, Tensor& diff_src) {
        execute(device_, backward_data_,
                {{DNNL_ARG_DIFF_DST, diff_dst},
                 {DNNL_ARG_WEIGHTS, weights_for(weights, data_weights_, to_data_)},
                 {DNNL_ARG_DIFF_SRC, data_diff_src_.at(diff_src)}},
                "convolution_backward_data");
        data_diff_src_.finish(device_);
    }

    void weights_with(const Tensor& src, dnnl::memory& diff_dst, Tensor& diff_weights,
                      Tensor& diff_bias) {
        dnnl_args args{{DNNL_ARG_SRC, weights_src_.read(device_, src)},
                       {DNNL_ARG_DIFF_DST, diff_dst},
                       {DNNL_ARG_DIFF_WEIGHTS, diff_weights_.memory}};
        if (config_.bias) args.emplace(DNNL_ARG_DIFF_BIAS, diff_bias_.memory);
        execute(device_, backward_weights_, args, "convolution_backward_weights");
        if (add_back_) {
            plain_weights_.set_data_handle(diff_weights.raw());
            execute(device_, add_back_,
                    {{DNNL_ARG_FROM, diff_weights_.memory}, {DNNL_ARG_TO, plain_weights_}},
                    "reorder (add diff_weights)");
        } else {
            add_into(diff_weights, diff_weights_.storage);
        }
        if (config_.bias) add_into(diff_bias, diff_bias_.storage);
    }

    void build(Device& device) {
        const auto& c = config_;
        auto& engine = device_.dnnl_engine();
        const dt operand = operand_type(c);
        const Shape src_shape{c.n, c.c, c.h, c.w},
            dst_shape{c.n, c.out_channels, c.out_h(), c.out_w()};
        // Our tensors (float32), and the same formats in the operands' type.
        const auto src_md = plain_desc(src_shape, c.layout);
        const auto dst_md = plain_desc(dst_shape, c.layout);
        const auto src_plain = plain_desc(src_shape, c.layout, operand);
        const auto dst_plain = plain_desc(dst_shape, c.layout, operand);
        const dnnl::memory::desc src_any(src_md.dims(), operand, tag::any);
        // The forward's output and the input's gradient are written in float32.
        const dnnl::memory::desc dst_any(dst_md.dims(), dt::f32, tag::any);
        const dnnl::memory::desc diff_dst_any(dst_md.dims(), operand, tag::any);
        const dnnl::memory::desc diff_src_any(src_md.dims(), dt::f32, tag::any);
        const auto bias_md =
            c.bias ? dnnl::memory::desc({c.out_channels}, dt::f32, tag::x) : dnnl::memory::desc();
        const auto any_md = weights_desc(c, tag::any, operand);
        const auto diff_any_md = weights_desc(c, tag::any);
        const auto plain_md = weights_desc(c, tag::oihw);
        const dnnl::memory::dims strides{c.stride_h, c.stride_w};
        // Symmetric padding: oneDNN checks the output size with the same floor division.
        const dnnl::memory::dims pad{c.pad_h, c.pad_w};

        const auto forward_with = [&](const dnnl::memory::desc& s, const dnnl::memory::desc& d) {
            return dnnl::convolution_forward::primitive_desc(
                {dnnl::prop_kind::forward_training, algo::convolution_direct, s, any_md, bias_md, d,
                 strides, pad, pad},
                engine);
        };
        auto fwd_pd = forward_with(src_any, dst_any);
        const bool chosen =
            same_size(fwd_pd.src_desc(), src_plain) && same_size(fwd_pd.dst_desc(), dst_md);
        if (!chosen) fwd_pd = forward_with(src_plain, dst_md);
        // The backward primitives take the same decision: chosen formats, or the plain ones.
        const auto& src_arg = chosen ? src_any : src_plain;
        const auto& diff_src_arg = chosen ? diff_src_any : src_md;
        const auto& diff_dst_arg = chosen ? diff_dst_any : dst_plain;
        const dnnl::convolution_backward_data::primitive_desc data_pd(
            {algo::convolution_direct, diff_src_arg, any_md, diff_dst_arg, strides, pad, pad},
            engine, fwd_pd);
        const auto weights_pd = first_usable_impl(
            [&](const dnnl::memory::desc& weights_md) {
                return dnnl::convolution_backward_weights::primitive_desc(
                    {algo::convolution_direct, src_arg, weights_md, bias_md, diff_dst_arg, strides,
                     pad, pad},
                    engine, fwd_pd);
            },
            [&](std::string_view impl) { return !faulty_backward_weights(c, impl); }, diff_any_md,
            plain_md);
        forward_ = dnnl::convolution_forward(fwd_pd);
        backward_data_ = dnnl::convolution_backward_data(data_pd);
        backward_weights_ = dnnl::convolution_backward_weights(weights_pd);

        forward_src_ = ActivationArg(src_md, fwd_pd.src_desc(), engine);
        forward_dst_ = ActivationArg(dst_md, fwd_pd.dst_desc(), engine);
        data_diff_dst_ = ActivationArg(dst_md, data_pd.diff_dst_desc(), engine);
        data_diff_src_ = ActivationArg(src_md, data_pd.diff_src_desc(), engine);
        weights_src_ = ActivationArg(src_md, weights_pd.src_desc(), engine);
        weights_diff_dst_ = ActivationArg(dst_md, weights_pd.diff_dst_desc(), engine);
        // Both placed at the output side of the scratch (place_scratch).
        same_diff_dst_ = data_pd.diff_dst_desc() == weights_pd.diff_dst_desc();
        // Scratch holds one input-side argument (src, diff_src) and one output-side one (dst,
        // diff_dst): no call uses two of one side.
        input_bytes_ = std::max({forward_src_.scratch_bytes(), data_diff_src_.scratch_bytes(),
                                 weights_src_.scratch_bytes()});
        // Rounded up so the output side starts on a cache line, as oneDNN's buffers prefer.
        input_bytes_ = (input_bytes_ + 63) / 64 * 64;
        output_bytes_ = std::max({forward_dst_.scratch_bytes(), data_diff_dst_.scratch_bytes(),
                                  weights_diff_dst_.scratch_bytes()});
        // Handles are set per call: these describe the caller's tensors, not ours.
        plain_weights_ = dnnl::memory(plain_md, engine, DNNL_MEMORY_NONE);
        if (c.bias) bias_ = dnnl::memory(bias_md, engine, DNNL_MEMORY_NONE);

        if (fwd_pd.weights_desc() != plain_md) {
            forward_weights_ = make_buffer(device, fwd_pd.weights_desc(), engine);
            to_forward_ = dnnl::reorder(plain_weights_, forward_weights_.memory);
        }
        if (data_pd.weights_desc() == fwd_pd.weights_desc()) {
            // Same format (the usual case): one buffer, filled again by each call.
            data_weights_ = forward_weights_;
            to_data_ = to_forward_;
        } else if (data_pd.weights_desc() != plain_md) {
            data_weights_ = make_buffer(device, data_pd.weights_desc(), engine);
            to_data_ = dnnl::reorder(plain_weights_, data_weights_.memory);
        }
        diff_weights_ = make_buffer(device, weights_pd.diff_weights_desc(), engine);
        // A plain scratch is added with a vector loop; oneDNN's only reorder with a sum
        // post-op between two plain formats is its generic, slower one.
        if (weights_pd.diff_weights_desc() != plain_md) {
            dnnl::post_ops add;
            add.append_sum(1.f);
            dnnl::primitive_attr attr;
            attr.set_post_ops(add);
            add_back_ = dnnl::reorder(dnnl::reorder::primitive_desc(
                engine, weights_pd.diff_weights_desc(), engine, plain_md, attr));
        }
        if (c.bias) {
            diff_bias_.storage = Tensor::empty({c.out_channels}, device);
            diff_bias_.memory = dnnl::memory(bias_md, engine, diff_bias_.storage.raw());
        }
    }

    // Points the reordered arguments at this thread's scratch for the coming call.
    void place_scratch() {
        if (input_bytes_ + output_bytes_ == 0) return;
        auto* base = static_cast<char*>(
            activation_scratch(device_).for_calling_thread(input_bytes_ + output_bytes_));
        for (auto* a : {&forward_src_, &data_diff_src_, &weights_src_}) a->place(base);
        for (auto* a : {&forward_dst_, &data_diff_dst_, &weights_diff_dst_})
            a->place(base + input_bytes_);
    }

    // The weights in `buffer`'s format: reordered from the plain tensor on every call (the
    // optimizer changes them between steps), or the plain tensor itself when the primitive
    // reads that format.
    dnnl::memory& weights_for(const Tensor& weights, WeightsBuffer& buffer,
                              dnnl::reorder& reorder) {
        plain_weights_.set_data_handle(weights.raw());
        if (!buffer.storage.defined()) return plain_weights_;
        execute(device_, reorder, {{DNNL_ARG_FROM, plain_weights_}, {DNNL_ARG_TO, buffer.memory}},
                "reorder (weights)");
        return buffer.memory;
    }

    CpuDevice& device_;
    Conv2dConfig config_;
    dnnl::convolution_forward forward_;
    dnnl::convolution_backward_data backward_data_;
    dnnl::convolution_backward_weights backward_weights_;
    ActivationArg forward_src_, forward_dst_, data_diff_dst_, data_diff_src_, weights_src_,
        weights_diff_dst_;
    std::size_t input_bytes_ = 0, output_bytes_ = 0;
    bool same_diff_dst_ = false;
    dnnl::memory bias_, plain_weights_;
    WeightsBuffer forward_weights_, data_weights_, diff_weights_, diff_bias_;
    dnnl::reorder to_forward_, to_data_, add_back_;
};

}  // namespace

std::unique_ptr<Conv2dKernel> make_conv2d_dnnl(Device& device, const Conv2dConfig& config) {
    return std::make_unique<Conv2dDnnl>(device, config);
}

}  // namespace tandem::cpu

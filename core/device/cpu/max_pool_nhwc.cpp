// Max pooling on channels-last activations, our own loop: the CPU default for max pooling in
// that layout. oneDNN 2.6's AVX2 kernel for it takes about four times longer in training (when
// it writes its argmax workspace) than in inference: 7.5 ms for LeNet-5's first pooling
// (64 x 20 x 24 x 24) on one Zen 3 core, a third of that net's training step. Here each
// output pixel's channels are one contiguous run, so the max over a window is a vectorised
// compare-and-select per window element, and the workspace keeps, per output element, which
// element of its window won (16 bits), for backward to route the gradient. Ties go to the
// first maximum in row-major window order, as PyTorch's and the other kernels'.
// Other layouts and average pooling stay on oneDNN (pool2d_dnnl.cpp).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

class MaxPoolNhwc final : public Pool2dKernel {
public:
    explicit MaxPoolNhwc(const Pool2dConfig& c) : c_(c), out_h_(c.out_h()), out_w_(c.out_w()) {}

    std::size_t workspace_bytes() const override {
        return static_cast<std::size_t>(c_.n * out_h_ * out_w_ * c_.c) * sizeof(std::uint16_t);
    }

    void forward(const Tensor& src, Tensor& dst, Tensor& workspace) override {
        const float* x = src.data<float>();
        float* y = dst.data<float>();
        auto* won =
            workspace.defined() ? reinterpret_cast<std::uint16_t*>(workspace.raw()) : nullptr;
        const std::int64_t channels = c_.c, rows = c_.n * out_h_;
#pragma omp parallel for if (rows * out_w_ * channels > kParallelMin)
        for (std::int64_t row = 0; row < rows; ++row) {
            const std::int64_t n = row / out_h_, oh = row % out_h_;
            const auto [h0, h1] = window(oh, c_.stride_h, c_.pad_h, c_.kernel_h, c_.h);
            for (std::int64_t ow = 0; ow < out_w_; ++ow) {
                const auto [w0, w1] = window(ow, c_.stride_w, c_.pad_w, c_.kernel_w, c_.w);
                const std::int64_t at = (row * out_w_ + ow) * channels;
                float* out = y + at;
                std::uint16_t* index = won ? won + at : nullptr;
                std::fill(out, out + channels, -std::numeric_limits<float>::infinity());
                if (index) std::fill(index, index + channels, std::uint16_t(0));
                for (std::int64_t ih = h0; ih < h1; ++ih)
                    for (std::int64_t iw = w0; iw < w1; ++iw) {
                        const float* in = x + ((n * c_.h + ih) * c_.w + iw) * channels;
                        const auto k = static_cast<std::uint16_t>(
                            (ih - (oh * c_.stride_h - c_.pad_h)) * c_.kernel_w +
                            (iw - (ow * c_.stride_w - c_.pad_w)));
                        if (index) {
                            for (std::int64_t ch = 0; ch < channels; ++ch) {
                                const bool larger =
                                    in[ch] > out[ch];  // strictly: the first maximum wins
                                out[ch] = larger ? in[ch] : out[ch];
                                index[ch] = larger ? k : index[ch];
                            }
                        } else {
                            for (std::int64_t ch = 0; ch < channels; ++ch)
                                out[ch] = std::max(out[ch], in[ch]);
                        }
                    }
                // A window of -inf (or NaN) inputs keeps its first element, as the others do.
                if (index)
                    for (std::int64_t ch = 0; ch < channels; ++ch)
                        if (!(out[ch] > -std::numeric_limits<float>::infinity()))
                            out[ch] = x[((n * c_.h + h0) * c_.w + w0) * channels + ch];
            }
        }
    }

    void backward(const Tensor& diff_dst, const Tensor& workspace, Tensor& diff_src) override {
        const float* dy = diff_dst.data<float>();
        const auto* won = reinterpret_cast<const std::uint16_t*>(workspace.raw());
        float* dx = diff_src.data<float>();
        const std::int64_t channels = c_.c;
        // Overlapping windows (stride below the kernel) add into one input: each sample by
        // one thread, so no two threads write one element.
#pragma omp parallel for if (c_.n * c_.h * c_.w * channels > kParallelMin)
        for (std::int64_t n = 0; n < c_.n; ++n) {
            std::memset(dx + n * c_.h * c_.w * channels, 0,
                        sizeof(float) * std::size_t(c_.h * c_.w * channels));
            for (std::int64_t oh = 0; oh < out_h_; ++oh)
                for (std::int64_t ow = 0; ow < out_w_; ++ow) {
                    const std::int64_t at = ((n * out_h_ + oh) * out_w_ + ow) * channels;
                    const std::int64_t top = oh * c_.stride_h - c_.pad_h,
                                       left = ow * c_.stride_w - c_.pad_w;
                    for (std::int64_t ch = 0; ch < channels; ++ch) {
                        const std::int64_t k = won[at + ch];
                        const std::int64_t ih = top + k / c_.kernel_w, iw = left + k % c_.kernel_w;
                        dx[((n * c_.h + ih) * c_.w + iw) * channels + ch] += dy[at + ch];
                    }
                }
        }
    }

private:
    // The input rows (or columns) [first, last) of output position `o`, clipped to the input.
    static std::pair<std::int64_t, std::int64_t> window(std::int64_t o, std::int64_t stride,
                                                        std::int64_t pad, std::int64_t kernel,
                                                        std::int64_t in) {
        const std::int64_t start = o * stride - pad;
        return {std::max<std::int64_t>(start, 0), std::min(start + kernel, in)};
    }

    Pool2dConfig c_;
    std::int64_t out_h_, out_w_;
};

}  // namespace

std::unique_ptr<Pool2dKernel> make_pool2d_cpu(Device& device, const Pool2dConfig& config) {
    if (config.kind == PoolKind::max && config.layout == Layout::channels_last &&
        config.kernel_h * config.kernel_w <= std::numeric_limits<std::uint16_t>::max())
        return std::make_unique<MaxPoolNhwc>(config);
    return make_pool2d_dnnl(device, config);
}

}  // namespace tandem::cpu

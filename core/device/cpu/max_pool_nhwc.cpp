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
#include <vector>

#include "device/cpu/channel_vectors.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

// A window index for each channel of a vector, as 32-bit lanes and as the workspace's 16-bit.
using Index = std::int32_t __attribute__((vector_size(4 * vec::kVec)));
using Index16 = std::uint16_t __attribute__((vector_size(2 * vec::kVec)));
using UnalignedIndex16 =
    std::uint16_t __attribute__((vector_size(2 * vec::kVec), aligned(2), may_alias));

class MaxPoolNhwc final : public Pool2dKernel {
public:
    explicit MaxPoolNhwc(const Pool2dConfig& c) : c_(c), out_h_(c.out_h()), out_w_(c.out_w()) {
        // Window element k's offset from the window's top-left input element, in floats.
        for (std::int64_t k = 0; k < c.kernel_h * c.kernel_w; ++k)
            offset_.push_back((k / c.kernel_w * c.w + k % c.kernel_w) * c.c);
        tiled_ = c.stride_h == c.kernel_h && c.stride_w == c.kernel_w && c.pad_h == 0 &&
                 c.pad_w == 0 && out_h_ * c.stride_h == c.h && out_w_ * c.stride_w == c.w;
    }

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
                const Window win{
                    x + ((n * c_.h + h0) * c_.w + w0) * channels, static_cast<int>(h1 - h0),
                    static_cast<int>(w1 - w0),
                    static_cast<int>((h0 - (oh * c_.stride_h - c_.pad_h)) * c_.kernel_w +
                                     (w0 - (ow * c_.stride_w - c_.pad_w)))};
                for (std::int64_t ch = 0; ch < channels; ch += vec::kVec)
                    max_of(win, ch,
                           static_cast<int>(std::min<std::int64_t>(vec::kVec, channels - ch)),
                           y + at + ch, won ? won + at + ch : nullptr);
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
            if (!tiled_)
                std::memset(dx + n * c_.h * c_.w * channels, 0,
                            sizeof(float) * std::size_t(c_.h * c_.w * channels));
            for (std::int64_t oh = 0; oh < out_h_; ++oh)
                for (std::int64_t ow = 0; ow < out_w_; ++ow) {
                    const std::int64_t at = ((n * out_h_ + oh) * out_w_ + ow) * channels;
                    // The window's top-left element, padding included (a winner is inside).
                    const std::int64_t corner = ((n * c_.h + oh * c_.stride_h - c_.pad_h) * c_.w +
                                                 ow * c_.stride_w - c_.pad_w) *
                                                channels;
                    if (tiled_) {
                        write_window(dy + at, won + at, dx + corner);
                        continue;
                    }
                    for (std::int64_t ch = 0; ch < channels; ++ch)
                        dx[corner + offset_[won[at + ch]] + ch] += dy[at + ch];
                }
        }
    }

private:
    // Windows that tile the input exactly write each input element once: the winner's gradient
    // or zero, with no zeroing pass before and no scattered adds. Channels past a whole vector
    // one at a time: with AVX's masked stores (slow on Zen 3) the tail took longer.
    void write_window(const float* dy, const std::uint16_t* won, float* corner) const {
        const std::int64_t channels = c_.c, elements = c_.kernel_h * c_.kernel_w;
        std::int64_t ch = 0;
        for (; ch + vec::kVec <= channels; ch += vec::kVec) {
            const vec::Vec g = vec::load(dy + ch, vec::kVec);
            const Index which = __builtin_convertvector(
                *reinterpret_cast<const UnalignedIndex16*>(won + ch), Index);
            for (std::int64_t k = 0; k < elements; ++k)
                vec::store(corner + offset_[k] + ch,
                           which == static_cast<std::int32_t>(k) ? g : vec::Vec{}, vec::kVec);
        }
        for (; ch < channels; ++ch)
            for (std::int64_t k = 0; k < elements; ++k)
                corner[offset_[k] + ch] = won[ch] == k ? dy[ch] : 0.f;
    }

    // The inside part of one output pixel's window: its top-left input element, its rows and
    // columns, and that element's index in the whole window (the workspace's numbering).
    struct Window {
        const float* first;
        int rows, cols, first_index;
    };

    // The max over the window of `lanes` (1..8) channels from ch, and which window element
    // won. Strictly larger wins, so the first maximum in row-major order; a window of -inf (or
    // NaN) inputs keeps its first element, as the other kernels do. Channels past a whole
    // vector (LeNet-5's 20 and 50) go through masked loads and one masked store: LeNet-5's first
    // pooling forward went from 0.45-0.79 to 0.37-0.59 ms (least and median of ten alternating
    // runs, one Zen 3 core) against a channel at a time.
    void max_of(const Window& win, std::int64_t ch, int lanes, float* out,
                std::uint16_t* index) const {
        const float lowest = -std::numeric_limits<float>::infinity();
        vec::Vec best = vec::Vec{} + lowest;
        Index which = Index{};
        for (int i = 0; i < win.rows; ++i)
            for (int j = 0; j < win.cols; ++j) {
                const vec::Vec v = vec::load(win.first + (i * c_.w + j) * c_.c + ch, lanes);
                const auto k = static_cast<std::int32_t>(win.first_index + i * c_.kernel_w + j);
                const auto larger = v > best;
                best = larger ? v : best;
                which = larger ? Index{} + k : which;
            }
        const vec::Vec first = vec::load(win.first + ch, lanes);
        best = best > lowest ? best : first;
        vec::store(out, best, lanes);
        if (!index) return;
        const Index16 won = __builtin_convertvector(which, Index16);
        if (lanes == vec::kVec)
            *reinterpret_cast<UnalignedIndex16*>(index) = won;
        else
            std::memcpy(index, &won, static_cast<std::size_t>(lanes) * sizeof(std::uint16_t));
    }

    // The input rows (or columns) [first, last) of output position `o`, clipped to the input.
    static std::pair<std::int64_t, std::int64_t> window(std::int64_t o, std::int64_t stride,
                                                        std::int64_t pad, std::int64_t kernel,
                                                        std::int64_t in) {
        const std::int64_t start = o * stride - pad;
        return {std::max<std::int64_t>(start, 0), std::min(start + kernel, in)};
    }

    Pool2dConfig c_;
    std::int64_t out_h_, out_w_;
    std::vector<std::int64_t> offset_;
    bool tiled_ = false;  // the windows tile the input: no overlap, no gap, no padding
};

}  // namespace

std::unique_ptr<Pool2dKernel> make_pool2d_cpu(Device& device, const Pool2dConfig& config) {
    if (config.kind == PoolKind::max && config.layout == Layout::channels_last &&
        config.kernel_h * config.kernel_w <= std::numeric_limits<std::uint16_t>::max())
        return std::make_unique<MaxPoolNhwc>(config);
    return make_pool2d_dnnl(device, config);
}

}  // namespace tandem::cpu

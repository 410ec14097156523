// Max and average pooling, naive loops: the oracle for the oneDNN kernel.
//
// Max pooling's workspace holds, per output element (in logical order), the int32 index
// h * W + w of its input within the channel plane; ties go to the first maximum met in
// row-major window order. Average pooling follows PyTorch: with count_include_pad the
// divisor is the window clipped to input + padding, otherwise the window clipped to the input.
#include <algorithm>
#include <cstring>
#include <limits>

#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

class Pool2dReference final : public Pool2dKernel {
public:
    explicit Pool2dReference(const Pool2dConfig& c) : c_(c), out_h_(c.out_h()), out_w_(c.out_w()) {}

    std::size_t workspace_bytes() const override {
        return c_.kind == PoolKind::max
                   ? std::size_t(c_.n * c_.c * out_h_ * out_w_) * sizeof(std::int32_t)
                   : 0;
    }

    void forward(const Tensor& src, Tensor& dst, Tensor& workspace) override {
        const float* x = src.data<float>();
        float* y = dst.data<float>();
        std::int32_t* arg = c_.kind == PoolKind::max && workspace.defined()
                                ? reinterpret_cast<std::int32_t*>(workspace.data<unsigned char>())
                                : nullptr;
        const auto xs = src.strides(), ys = dst.strides();
        std::int64_t k = 0;
        for_each_window([&](std::int64_t n, std::int64_t c, std::int64_t oh, std::int64_t ow,
                            const Window& win) {
            const float* plane = x + n * xs[0] + c * xs[1];
            float result;
            if (c_.kind == PoolKind::max) {
                float best = -std::numeric_limits<float>::infinity();
                std::int32_t best_at = -1;
                for (std::int64_t h = win.h0; h < win.h1; ++h)
                    for (std::int64_t w = win.w0; w < win.w1; ++w)
                        if (plane[h * xs[2] + w * xs[3]] > best || best_at < 0) {
                            best = plane[h * xs[2] + w * xs[3]];
                            best_at = std::int32_t(h * c_.w + w);
                        }
                result = best;
                if (arg) arg[k] = best_at;
            } else {
                double sum = 0;
                for (std::int64_t h = win.h0; h < win.h1; ++h)
                    for (std::int64_t w = win.w0; w < win.w1; ++w)
                        sum += plane[h * xs[2] + w * xs[3]];
                result = float(sum / double(win.divisor));
            }
            y[n * ys[0] + c * ys[1] + oh * ys[2] + ow * ys[3]] = result;
            ++k;
        });
    }

    void backward(const Tensor& diff_dst, const Tensor& workspace, Tensor& diff_src) override {
        const float* dy = diff_dst.data<float>();
        float* dx = diff_src.data<float>();
        std::memset(dx, 0, diff_src.nbytes());
        const std::int32_t* arg = nullptr;
        if (c_.kind == PoolKind::max) {
            TANDEM_CHECK(workspace.defined())
                << "max pooling backward needs the workspace of a training forward";
            arg = reinterpret_cast<const std::int32_t*>(workspace.data<unsigned char>());
        }
        const auto xs = diff_src.strides(), ys = diff_dst.strides();
        std::int64_t k = 0;
        for_each_window([&](std::int64_t n, std::int64_t c, std::int64_t oh, std::int64_t ow,
                            const Window& win) {
            float* plane = dx + n * xs[0] + c * xs[1];
            const float g = dy[n * ys[0] + c * ys[1] + oh * ys[2] + ow * ys[3]];
            if (arg) {
                const std::int64_t at = arg[k];
                plane[(at / c_.w) * xs[2] + (at % c_.w) * xs[3]] += g;
            } else {
                const float share = g / float(win.divisor);
                for (std::int64_t h = win.h0; h < win.h1; ++h)
                    for (std::int64_t w = win.w0; w < win.w1; ++w)
                        plane[h * xs[2] + w * xs[3]] += share;
            }
            ++k;
        });
    }

private:
    // An output's window clipped to the input, and its averaging divisor.
    struct Window {
        std::int64_t h0, h1, w0, w1, divisor;
    };

    // Calls f(n, c, oh, ow, window) for every output element in logical order.
    template <class F>
    void for_each_window(F&& f) const {
        for (std::int64_t n = 0; n < c_.n; ++n)
            for (std::int64_t c = 0; c < c_.c; ++c)
                for (std::int64_t oh = 0; oh < out_h_; ++oh)
                    for (std::int64_t ow = 0; ow < out_w_; ++ow) {
                        const std::int64_t hs = oh * c_.stride_h - c_.pad_h;
                        const std::int64_t ws = ow * c_.stride_w - c_.pad_w;
                        const std::int64_t he = std::min(hs + c_.kernel_h, c_.h + c_.pad_h);
                        const std::int64_t we = std::min(ws + c_.kernel_w, c_.w + c_.pad_w);
                        Window win{std::max<std::int64_t>(hs, 0), std::min(he, c_.h),
                                   std::max<std::int64_t>(ws, 0), std::min(we, c_.w), 0};
                        win.divisor = c_.count_include_pad ? (he - hs) * (we - ws)
                                                           : (win.h1 - win.h0) * (win.w1 - win.w0);
                        f(n, c, oh, ow, win);
                    }
    }

    Pool2dConfig c_;
    std::int64_t out_h_, out_w_;
};

}  // namespace

std::unique_ptr<Pool2dKernel> make_pool2d_reference(Device&, const Pool2dConfig& config) {
    return std::make_unique<Pool2dReference>(config);
}

}  // namespace tandem::cpu

// Conv2d, naive loops over the definition: the oracle for the oneDNN kernel. Activations are
// addressed through their tensors' strides, so both layouts take the same code; sums are
// accumulated in double so the oracle is more exact than what it checks.
#include <vector>

#include "device/cpu/kernels_cpu.h"
#include "device/cpu/reference/rounded_operands.h"

namespace tandem::cpu {
namespace {

// Element (n, c, h, w) of a 4-D tensor, through its layout's strides.
struct View4 {
    float* data;
    std::int64_t sn, sc, sh, sw;
    explicit View4(const Tensor& t) : data(t.data<float>()) {
        const auto s = t.strides();
        sn = s[0], sc = s[1], sh = s[2], sw = s[3];
    }
    float& at(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const {
        return data[n * sn + c * sc + h * sh + w * sw];
    }
};

class Conv2dReference final : public Conv2dKernel {
public:
    explicit Conv2dReference(const Conv2dConfig& config) : c_(config) {}

    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        const View4 x(src), y(dst);
        const float* w = weights.data<float>();
        const float* b = c_.bias ? bias.data<float>() : nullptr;
        for (std::int64_t n = 0; n < c_.n; ++n)
            for (std::int64_t oc = 0; oc < c_.out_channels; ++oc)
                for (std::int64_t oh = 0; oh < c_.out_h(); ++oh)
                    for (std::int64_t ow = 0; ow < c_.out_w(); ++ow) {
                        double sum = b ? b[oc] : 0.0;
                        each_tap(oc, oh, ow,
                                 [&](std::int64_t ic, std::int64_t ih, std::int64_t iw,
                                     std::int64_t wi) {
                                     sum += double(x.at(n, ic, ih, iw)) * double(w[wi]);
                                 });
                        y.at(n, oc, oh, ow) = static_cast<float>(sum);
                    }
    }

    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        const View4 dy(diff_dst), dx(diff_src);
        const float* w = weights.data<float>();
        std::vector<double> acc(static_cast<std::size_t>(c_.n * c_.c * c_.h * c_.w), 0.0);
        auto slot = [&](std::int64_t n, std::int64_t ic, std::int64_t ih, std::int64_t iw) {
            return static_cast<std::size_t>(((n * c_.c + ic) * c_.h + ih) * c_.w + iw);
        };
        for (std::int64_t n = 0; n < c_.n; ++n)
            for (std::int64_t oc = 0; oc < c_.out_channels; ++oc)
                for (std::int64_t oh = 0; oh < c_.out_h(); ++oh)
                    for (std::int64_t ow = 0; ow < c_.out_w(); ++ow) {
                        const double g = dy.at(n, oc, oh, ow);
                        each_tap(oc, oh, ow,
                                 [&](std::int64_t ic, std::int64_t ih, std::int64_t iw,
                                     std::int64_t wi) {
                                     acc[slot(n, ic, ih, iw)] += g * double(w[wi]);
                                 });
                    }
        for (std::int64_t n = 0; n < c_.n; ++n)
            for (std::int64_t ic = 0; ic < c_.c; ++ic)
                for (std::int64_t ih = 0; ih < c_.h; ++ih)
                    for (std::int64_t iw = 0; iw < c_.w; ++iw)
                        dx.at(n, ic, ih, iw) = static_cast<float>(acc[slot(n, ic, ih, iw)]);
    }

    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        const View4 x(src), dy(diff_dst);
        float* dw = diff_weights.data<float>();
        std::vector<double> acc(static_cast<std::size_t>(diff_weights.numel()), 0.0);
        std::vector<double> bias_acc(static_cast<std::size_t>(c_.out_channels), 0.0);
        for (std::int64_t n = 0; n < c_.n; ++n)
            for (std::int64_t oc = 0; oc < c_.out_channels; ++oc)
                for (std::int64_t oh = 0; oh < c_.out_h(); ++oh)
                    for (std::int64_t ow = 0; ow < c_.out_w(); ++ow) {
                        const double g = dy.at(n, oc, oh, ow);
                        bias_acc[static_cast<std::size_t>(oc)] += g;
                        each_tap(oc, oh, ow,
                                 [&](std::int64_t ic, std::int64_t ih, std::int64_t iw,
                                     std::int64_t wi) {
                                     acc[static_cast<std::size_t>(wi)] +=
                                         g * double(x.at(n, ic, ih, iw));
                                 });
                    }
        for (std::size_t i = 0; i < acc.size(); ++i) dw[i] += static_cast<float>(acc[i]);
        if (c_.bias) {
            float* db = diff_bias.data<float>();
            for (std::size_t i = 0; i < bias_acc.size(); ++i)
                db[i] += static_cast<float>(bias_acc[i]);
        }
    }

private:
    // Calls f(input channel, ih, iw, flat weight index) for every tap of output (oc, oh, ow)
    // that falls inside the input (taps on the zero padding contribute nothing).
    template <class F>
    void each_tap(std::int64_t oc, std::int64_t oh, std::int64_t ow, F f) const {
        const std::int64_t in_per_group = c_.c / c_.groups;
        const std::int64_t out_per_group = c_.out_channels / c_.groups;
        const std::int64_t first_ic = oc / out_per_group * in_per_group;
        for (std::int64_t k = 0; k < in_per_group; ++k)
            for (std::int64_t kh = 0; kh < c_.kernel_h; ++kh) {
                const std::int64_t ih = oh * c_.stride_h - c_.pad_h + kh;
                if (ih < 0 || ih >= c_.h) continue;
                for (std::int64_t kw = 0; kw < c_.kernel_w; ++kw) {
                    const std::int64_t iw = ow * c_.stride_w - c_.pad_w + kw;
                    if (iw < 0 || iw >= c_.w) continue;
                    f(first_ic + k, ih, iw,
                      ((oc * in_per_group + k) * c_.kernel_h + kh) * c_.kernel_w + kw);
                }
            }
    }

    Conv2dConfig c_;
};

}  // namespace

std::unique_ptr<Conv2dKernel> make_conv2d_reference(Device&, const Conv2dConfig& config) {
    return in_precision<Conv2dKernel>(std::make_unique<Conv2dReference>(config), config.precision);
}

}  // namespace tandem::cpu

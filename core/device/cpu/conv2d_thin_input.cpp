// The weights' gradient of a convolution over few input channels (a net's first layer: 1
// channel for Fashion-MNIST, 3 for RGB) in channels-last, our own loop; forward and backward
// data stay on the oneDNN kernel this one wraps. oneDNN 2.6's AVX2 backward-weights kernel for
// smallbn's 1 -> 32 3x3 layer took 5 ms of its 100 ms step (batch 64, one Zen 3 core), 3x
// the layer's forward, for 0.03 GFLOP.
//
// dw[o][i][kh][kw] = sum over images and output pixels of dy[.., o] x[.., i] at the tap's input
// pixel. For each image and tap, the output channels' sums are a few vectors in registers
// (at most 64 channels); the image's gradient (one L2's worth) is read once a tap. Images go
// to the threads; each thread sums into its own copy, added in thread order.
#include <omp.h>

#include <algorithm>

#include "device/cpu/dnnl_activation.h"
#include "device/cpu/kernels_cpu.h"
#include "device/cpu/winograd_tiles.h"

namespace tandem::cpu {
namespace {

namespace vec = winograd;  // the 8-channel vector type and its loads

constexpr int kMaxOutputVectors = 8;  // 64 output channels

class Conv2dThinInput final : public Conv2dKernel {
public:
    Conv2dThinInput(Device& device, const Conv2dConfig& c, std::unique_ptr<Conv2dKernel> direct)
        : device_(as_cpu(device)), c_(c), threads_(std::max(1, device.threads())),
          direct_(std::move(direct)) {}

    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        direct_->forward(src, weights, bias, dst);
    }

    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        direct_->backward_data(diff_dst, weights, diff_src);
    }

    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        const std::int64_t taps = c_.c * c_.kernel_h * c_.kernel_w;
        const std::int64_t sums = (taps + (c_.bias ? 1 : 0)) * c_.out_channels;
        // The device's per-call scratch (counted against its memory cap), one block a thread.
        auto* partial = static_cast<float*>(activation_scratch(device_).for_calling_thread(
            static_cast<std::size_t>(threads_ * sums) * sizeof(float)));
        const float* x = src.data<float>();
        const float* dy = diff_dst.data<float>();
        int team = 1;
#pragma omp parallel num_threads(threads_)
        {
            if (omp_get_thread_num() == 0) team = omp_get_num_threads();
            float* mine = partial + omp_get_thread_num() * sums;
            std::fill(mine, mine + sums, 0.f);
#pragma omp for schedule(static)
            for (std::int64_t n = 0; n < c_.n; ++n) add_image(n, x, dy, mine);
        }
        // mine[tap * outputs + o] (the bias last) into dw[o][i][kh][kw] and db[o].
        float* dw = diff_weights.data<float>();
        for (int t = 0; t < team; ++t) {
            const float* sum = partial + t * sums;
            for (std::int64_t tap = 0; tap < taps; ++tap)
                for (std::int64_t o = 0; o < c_.out_channels; ++o)
                    dw[o * taps + tap] += sum[tap * c_.out_channels + o];
            if (c_.bias)
                for (std::int64_t o = 0; o < c_.out_channels; ++o)
                    diff_bias.data<float>()[o] += sum[taps * c_.out_channels + o];
        }
    }

private:
    // One image's share of every tap's sums, added into `sum` (taps x outputs, then the bias).
    void add_image(std::int64_t n, const float* x, const float* dy, float* sum) const {
        const std::int64_t oh = c_.out_h(), ow = c_.out_w(), outputs = c_.out_channels;
        const int vectors = static_cast<int>(outputs / vec::kVec);
        const float* image_dy = dy + n * oh * ow * outputs;
        const float* image_x = x + n * c_.h * c_.w * c_.c;
        for (std::int64_t i = 0; i < c_.c; ++i)
            for (std::int64_t kh = 0; kh < c_.kernel_h; ++kh)
                for (std::int64_t kw = 0; kw < c_.kernel_w; ++kw) {
                    vec::Vec acc[kMaxOutputVectors] = {};
                    for (std::int64_t y = 0; y < oh; ++y) {
                        const std::int64_t iy = y * c_.stride_h - c_.pad_h + kh;
                        if (iy < 0 || iy >= c_.h) continue;
                        for (std::int64_t xo = 0; xo < ow; ++xo) {
                            const std::int64_t ix = xo * c_.stride_w - c_.pad_w + kw;
                            if (ix < 0 || ix >= c_.w) continue;
                            const float v = image_x[(iy * c_.w + ix) * c_.c + i];
                            const float* g = image_dy + (y * ow + xo) * outputs;
                            for (int j = 0; j < vectors; ++j)
                                acc[j] += v * vec::load(g + j * vec::kVec, vec::kVec);
                        }
                    }
                    float* out = sum + ((i * c_.kernel_h + kh) * c_.kernel_w + kw) * outputs;
                    for (int j = 0; j < vectors; ++j)
                        for (int l = 0; l < vec::kVec; ++l) out[j * vec::kVec + l] += acc[j][l];
                }
        if (!c_.bias) return;
        vec::Vec acc[kMaxOutputVectors] = {};
        for (std::int64_t p = 0; p < oh * ow; ++p)
            for (int j = 0; j < vectors; ++j)
                acc[j] += vec::load(image_dy + p * outputs + j * vec::kVec, vec::kVec);
        float* out = sum + c_.c * c_.kernel_h * c_.kernel_w * outputs;
        for (int j = 0; j < vectors; ++j)
            for (int l = 0; l < vec::kVec; ++l) out[j * vec::kVec + l] += acc[j][l];
    }

    CpuDevice& device_;
    Conv2dConfig c_;
    int threads_;
    std::unique_ptr<Conv2dKernel> direct_;
};

}  // namespace

bool thin_input_fits(const Conv2dConfig& c) {
    return c.layout == Layout::channels_last && c.groups == 1 && c.c <= 4 &&
           c.out_channels % winograd::kVec == 0 &&
           c.out_channels <= kMaxOutputVectors * winograd::kVec;
}

std::unique_ptr<Conv2dKernel> make_conv2d_thin_input(Device& device, const Conv2dConfig& config) {
    TANDEM_CHECK_AS(BackendError, thin_input_fits(config))
        << "the thin_input convolution takes at most 4 input channels and up to 64 output "
           "channels in multiples of 8, one group, on channels-last activations";
    return std::make_unique<Conv2dThinInput>(device, config, make_conv2d_dnnl(device, config));
}

}  // namespace tandem::cpu

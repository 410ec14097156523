// The forward and the weights' gradient of a convolution over few input channels (a net's first
// layer: 1 channel for Fashion-MNIST, 3 for RGB) in channels-last, our own loops; backward data,
// and the forward of output channels that fit one vector, stay on the oneDNN kernel this one
// wraps. oneDNN 2.6's AVX2 backward-weights kernel for smallbn's 1 -> 32 3x3 layer took 5 ms of
// its 100 ms step (batch 64, one Zen 3 core), 3x the layer's forward, for 0.03 GFLOP; on a Zen 5
// (AVX-512) its forward of that layer took 0.77 ms (14% of the FMA peak) and of LeNet-5's 1 -> 20
// 5x5 0.45 ms (31%).
//
// y[.., o] = bias[o] + sum over taps of x at the tap's input pixel x w[o][tap]. The weights are
// packed once a call as taps x the output channels in whole vectors (zeros past the last); for
// each image its input channels are copied into zero-padded planes, and a block of output
// pixels along a row keeps its channels' sums in registers, each tap's weight vectors loaded
// once for the block and each input value broadcast.
//
// dw[o][i][kh][kw] = sum over images and output pixels of dy[.., o] x[.., i] at the tap's input
// pixel. For each image, input channel and filter row, a block of taps along the row keeps
// its output channels' sums in registers (at most 64 channels; as many taps as the registers
// hold), so each output pixel's gradient is loaded once for the whole block. The image's input
// channel is first copied into a zero-padded plane (no bounds checks in the loop), and its
// gradient, when the channels end inside a vector, into rows of whole vectors. Images go to
// the threads; each thread sums into its own copy, added in thread order.

#include <algorithm>

#include "device/cpu/dnnl_activation.h"
#include "device/cpu/kernels_cpu.h"
#include "device/cpu/thread_blocks.h"
#include "device/cpu/winograd_tiles.h"

namespace tandem::cpu {
namespace {

namespace vec = winograd;  // the channel vectors, their loads and stores

constexpr int kMaxOutputVectors = 8;  // 64 output channels
// The vector registers of the build's vectors: AVX-512's 32, AVX's 16.
constexpr int kRegisters = vec::kVec == 16 ? 32 : 16;

// Taps a block keeps in registers: taps x vectors sums and a broadcast input value (GCC
// reads the gradient's vectors straight into the multiply-adds); at most 8.
constexpr int taps_per_block(int vectors) {
    return std::clamp((kRegisters - 1) / vectors, 1, 8);
}

// Output pixels a forward block keeps in registers: pixels x vectors sums, a tap's weight
// vectors and a broadcast input value; at most 12.
constexpr int pixels_per_block(int vectors) {
    return std::clamp((kRegisters - 1 - vectors) / vectors, 1, 12);
}

// f.template operator()<B>(at) over [at, end) in blocks of B, the rest in smaller blocks (each
// block size a constant, so its sums stay in registers).
template <int B, typename F>
void in_blocks(std::int64_t at, std::int64_t end, F&& f) {
    for (; at + B <= end; at += B) f.template operator()<B>(at);
    if constexpr (B > 1)
        if (at < end) in_blocks<B - 1>(at, end, f);
}

class Conv2dThinInput final : public Conv2dKernel {
public:
    Conv2dThinInput(Device& device, const Conv2dConfig& c, std::unique_ptr<Conv2dKernel> direct)
        : device_(as_cpu(device)), c_(c), threads_(std::max(1, device.threads())),
          vectors_(static_cast<int>((c.out_channels + vec::kVec - 1) / vec::kVec)),
          width_(vectors_ * vec::kVec), plane_h_(c.h + 2 * c.pad_h), plane_w_(c.w + 2 * c.pad_w),
          direct_(std::move(direct)) {}

    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        if (!forward_in_loop()) return direct_->forward(src, weights, bias, dst);
        const std::int64_t taps = c_.c * c_.kernel_h * c_.kernel_w, outputs = c_.out_channels;
        const std::int64_t packed = (taps + 1) * width_;  // the weights, then the bias
        const std::int64_t planes = c_.c * plane_h_ * plane_w_;
        const std::size_t block_bytes = static_cast<std::size_t>(planes) * sizeof(float);
        auto* scratch = static_cast<float*>(activation_scratch(device_).for_calling_thread(
            static_cast<std::size_t>(packed) * sizeof(float) + threads_ * block_bytes));
        const float* w = weights.data<float>();
        std::fill(scratch, scratch + packed, 0.f);
        for (std::int64_t o = 0; o < outputs; ++o) {
            for (std::int64_t tap = 0; tap < taps; ++tap)
                scratch[tap * width_ + o] = w[o * taps + tap];
            if (c_.bias) scratch[taps * width_ + o] = bias.data<float>()[o];
        }
        const float* x = src.data<float>();
        float* y = dst.data<float>();
        const std::int64_t image_in = c_.h * c_.w * c_.c,
                           image_out = c_.out_h() * c_.out_w() * outputs;
        run_in_blocks(
            reinterpret_cast<char*>(scratch + packed), block_bytes, threads_, [&](char* block) {
                float* plane = reinterpret_cast<float*>(block);
                // The planes' padding stays zero; each image writes their inside.
                std::fill(plane, plane + planes, 0.f);
#pragma omp for schedule(static)
                for (std::int64_t n = 0; n < c_.n; ++n) {
                    fill_planes(x + n * image_in, plane);
                    with_vectors(
                        [&]<int V> { forward_image<V>(plane, scratch, y + n * image_out); });
                }
                return true;
            });
    }

    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        direct_->backward_data(diff_dst, weights, diff_src);
    }

    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        const std::int64_t taps = c_.c * c_.kernel_h * c_.kernel_w, outputs = c_.out_channels;
        const std::int64_t sums = (taps + (c_.bias ? 1 : 0)) * width_;
        const std::int64_t padded_dy =
            outputs % vec::kVec ? c_.out_h() * c_.out_w() * width_ : std::int64_t(0);
        const std::int64_t per_thread = sums + padded_dy + c_.c * plane_h_ * plane_w_;
        // The device's per-call scratch (counted against its memory cap), one block a thread.
        const std::size_t block_bytes = static_cast<std::size_t>(per_thread) * sizeof(float);
        auto* partial = static_cast<float*>(
            activation_scratch(device_).for_calling_thread(threads_ * block_bytes));
        const float* x = src.data<float>();
        const float* dy = diff_dst.data<float>();
        const TeamRun run = run_in_blocks(
            reinterpret_cast<char*>(partial), block_bytes, threads_, [&](char* block) {
                float* mine = reinterpret_cast<float*>(block);
                float* gradient = mine + sums;
                float* plane = gradient + padded_dy;
                std::fill(mine, mine + sums, 0.f);
                // The planes' padding stays zero; each image writes their inside.
                std::fill(plane, plane + c_.c * plane_h_ * plane_w_, 0.f);
#pragma omp for schedule(static)
                for (std::int64_t n = 0; n < c_.n; ++n)
                    add_image(x, image_gradient(dy, n, padded_dy ? gradient : nullptr), n, plane,
                              mine);
                return true;
            });
        // mine[tap * width + o] (the bias last) into dw[o][i][kh][kw] and db[o].
        float* dw = diff_weights.data<float>();
        for (int t = 0; t < run.team; ++t) {
            const float* sum = partial + t * per_thread;
            for (std::int64_t tap = 0; tap < taps; ++tap)
                for (std::int64_t o = 0; o < outputs; ++o)
                    dw[o * taps + tap] += sum[tap * width_ + o];
            if (c_.bias)
                for (std::int64_t o = 0; o < outputs; ++o)
                    diff_bias.data<float>()[o] += sum[taps * width_ + o];
        }
    }

private:
    // Whether our forward loop beats oneDNN's: where each broadcast input value feeds 32 lanes
    // or more and a block holds 4 pixels or more (each tap's weights loaded once for them). On
    // a Zen 5 (AVX-512, one core, batch 64): LeNet-5's 1 -> 20 (two vectors, 12 pixels) 0.45
    // -> 0.30 ms, smallbn's 1 -> 32 0.79 -> 0.385, AlexNet's 3 -> 64 5x5 stride 2 (four
    // vectors, 6 pixels) 4.2 -> 3.0; ResNet-20's 3 -> 16 (one vector: 16 lanes) took 1.22-1.29
    // ms against oneDNN's 0.93 (batch 128). AVX2's blocks were not measured against oneDNN:
    // 32 channels there leave 2 pixels a block, so AVX2 keeps oneDNN's forward.
    bool forward_in_loop() const {
        return width_ >= 32 && pixels_per_block(vectors_) >= 4;
    }

    // An image's input channels (channels-last) into the insides of their zero-padded planes.
    void fill_planes(const float* image, float* planes) const {
        for (std::int64_t i = 0; i < c_.c; ++i) {
            float* plane = planes + i * plane_h_ * plane_w_;
            for (std::int64_t y = 0; y < c_.h; ++y)
                for (std::int64_t xi = 0; xi < c_.w; ++xi)
                    plane[(y + c_.pad_h) * plane_w_ + xi + c_.pad_w] =
                        image[(y * c_.w + xi) * c_.c + i];
        }
    }

    // An image's output (pixels x channels) from its planes and the packed weights, row by row
    // in blocks of P pixels, the rest in smaller blocks.
    template <int V>
    void forward_image(const float* planes, const float* packed, float* out) const {
        for (std::int64_t y = 0; y < c_.out_h(); ++y)
            in_blocks<pixels_per_block(V)>(0, c_.out_w(), [&]<int P>(std::int64_t x0) {
                forward_pixels<V, P>(planes, packed, y, x0, out);
            });
    }

    // Output pixels (y, x0 .. x0 + P): P x V vectors of sums in registers, from the bias.
    template <int V, int P>
    void forward_pixels(const float* planes, const float* packed, std::int64_t y, std::int64_t x0,
                        float* out) const {
        const std::int64_t taps = c_.c * c_.kernel_h * c_.kernel_w;
        vec::Vec acc[P][V];
#pragma GCC unroll 8
        for (int j = 0; j < V; ++j) {
            const vec::Vec b = vec::load(packed + taps * width_ + j * vec::kVec, vec::kVec);
#pragma GCC unroll 16
            for (int p = 0; p < P; ++p) acc[p][j] = b;
        }
        for (std::int64_t i = 0; i < c_.c; ++i)
            for (std::int64_t kh = 0; kh < c_.kernel_h; ++kh) {
                const float* row =
                    planes + (i * plane_h_ + y * c_.stride_h + kh) * plane_w_ + x0 * c_.stride_w;
                const float* tap = packed + (i * c_.kernel_h + kh) * c_.kernel_w * width_;
                for (std::int64_t kw = 0; kw < c_.kernel_w; ++kw) {
                    vec::Vec w[V];
#pragma GCC unroll 8
                    for (int j = 0; j < V; ++j)
                        w[j] = vec::load(tap + kw * width_ + j * vec::kVec, vec::kVec);
#pragma GCC unroll 16
                    for (int p = 0; p < P; ++p) {
                        const float v = row[p * c_.stride_w + kw];
#pragma GCC unroll 8
                        for (int j = 0; j < V; ++j) acc[p][j] += v * w[j];
                    }
                }
            }
        const std::int64_t outputs = c_.out_channels;
        float* o = out + (y * c_.out_w() + x0) * outputs;
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p)
#pragma GCC unroll 8
            for (int j = 0; j < V; ++j)
                vec::store(
                    o + p * outputs + j * vec::kVec, acc[p][j],
                    static_cast<int>(std::min<std::int64_t>(vec::kVec, outputs - j * vec::kVec)));
    }

    // Image n's output gradient, each pixel's channels in whole vectors: in place, or copied
    // into `padded` with zeros after the last channel.
    const float* image_gradient(const float* dy, std::int64_t n, float* padded) const {
        const std::int64_t pixels = c_.out_h() * c_.out_w(), outputs = c_.out_channels;
        const float* image = dy + n * pixels * outputs;
        if (!padded) return image;
        for (std::int64_t p = 0; p < pixels; ++p) {
            std::copy(image + p * outputs, image + (p + 1) * outputs, padded + p * width_);
            std::fill(padded + p * width_ + outputs, padded + (p + 1) * width_, 0.f);
        }
        return padded;
    }

    // Image n's share of every tap's sums, added into `sum` (taps x width, then the bias), from
    // its output gradient `g` (pixels x width).
    void add_image(const float* x, const float* g, std::int64_t n, float* planes,
                   float* sum) const {
        fill_planes(x + n * c_.h * c_.w * c_.c, planes);
        for (std::int64_t i = 0; i < c_.c; ++i) {
            const float* plane = planes + i * plane_h_ * plane_w_;
            for (std::int64_t kh = 0; kh < c_.kernel_h; ++kh)
                with_vectors([&]<int V> {
                    // The taps of filter row kh, in blocks.
                    in_blocks<taps_per_block(V)>(0, c_.kernel_w, [&]<int B>(std::int64_t kw) {
                        add_taps<V, B>(plane, g, i, kh, kw, sum);
                    });
                });
        }
        if (c_.bias)
            with_vectors([&]<int V> {
                vec::Vec acc[V] = {};
                for (std::int64_t p = 0; p < c_.out_h() * c_.out_w(); ++p)
                    for (int j = 0; j < V; ++j)
                        acc[j] += vec::load(g + p * width_ + j * vec::kVec, vec::kVec);
                add_sums(acc, V, sum + c_.c * c_.kernel_h * c_.kernel_w * width_);
            });
    }

    // f.template operator()<V>() with V the output channels' vectors as a constant.
    template <typename F>
    void with_vectors(F&& f) const {
        switch (vectors_) {
            case 1: return f.template operator()<1>();
            case 2: return f.template operator()<2>();
            case 3: return f.template operator()<3>();
            case 4: return f.template operator()<4>();
            case 5: return f.template operator()<5>();
            case 6: return f.template operator()<6>();
            case 7: return f.template operator()<7>();
            default: return f.template operator()<8>();
        }
    }

    // Taps (kh, kw0 .. kw0 + B) over input channel i: sum over the output pixels of the plane's
    // value at the tap times the pixel's gradient, B x V vectors of sums in registers.
    template <int V, int B>
    void add_taps(const float* plane, const float* g, std::int64_t i, std::int64_t kh,
                  std::int64_t kw0, float* sum) const {
        vec::Vec acc[B][V] = {};
        const std::int64_t oh = c_.out_h(), ow = c_.out_w();
        for (std::int64_t y = 0; y < oh; ++y) {
            const float* row = plane + (y * c_.stride_h + kh) * plane_w_ + kw0;
            const float* grad = g + y * ow * width_;
            for (std::int64_t xo = 0; xo < ow; ++xo) {
                vec::Vec d[V];
                for (int j = 0; j < V; ++j)
                    d[j] = vec::load(grad + xo * width_ + j * vec::kVec, vec::kVec);
                const float* at = row + xo * c_.stride_w;
                for (int b = 0; b < B; ++b)
                    for (int j = 0; j < V; ++j) acc[b][j] += at[b] * d[j];
            }
        }
        for (int b = 0; b < B; ++b)
            add_sums(acc[b], V, sum + ((i * c_.kernel_h + kh) * c_.kernel_w + kw0 + b) * width_);
    }

    static void add_sums(const vec::Vec* acc, int vectors, float* out) {
        for (int j = 0; j < vectors; ++j)
            for (int l = 0; l < vec::kVec; ++l) out[j * vec::kVec + l] += acc[j][l];
    }

    CpuDevice& device_;
    Conv2dConfig c_;
    int threads_;
    int vectors_;                     // the output channels' vectors (of vec::kVec)
    std::int64_t width_;              // the output channels in whole vectors
    std::int64_t plane_h_, plane_w_;  // the zero-padded input plane
    std::unique_ptr<Conv2dKernel> direct_;
};

}  // namespace

bool thin_input_fits(const Conv2dConfig& c) {
    return c.layout == Layout::channels_last && c.groups == 1 && c.c <= 4 &&
           c.out_channels <= kMaxOutputVectors * winograd::kVec;
}

std::unique_ptr<Conv2dKernel> make_conv2d_thin_input(Device& device, const Conv2dConfig& config) {
    TANDEM_CHECK_AS(BackendError, thin_input_fits(config))
        << "the thin_input convolution takes at most 4 input channels and up to 64 output "
           "channels, one group, on channels-last activations";
    return std::make_unique<Conv2dThinInput>(device, config, make_conv2d_dnnl(device, config));
}

}  // namespace tandem::cpu

// Conv2d by Winograd's F(4x4, 3x3), F(2x2, 3x3) and F(2x2, 5x5) (winograd_tiles.h) on
// channels-last activations: the CPU default for 3x3 and 5x5, stride-1 convolutions between
// enough channels (winograd_pays below, read by make_conv2d_cpu). oneDNN 2.6 offers Winograd only
// on AVX-512 machines; its direct AVX2 kernels ran AlexNet's and smallbn's layers at 55-65% of the
// FMA peak, and F(4x4, 3x3) does 2.25 multiplications per output and channel pair where the direct
// form does 9 (F(2x2, 5x5): 9 for 25).
//
// Each pass cuts the output into m x m blocks ("tiles") and hands chunks of tiles to the
// threads. For its chunk a thread transforms the input tiles (V: a*a matrices of tiles x input
// channels), multiplies each by the transformed filters (U: a*a matrices of input x output
// channels; thin_product.h), and transforms the products back into output blocks. A chunk
// is sized to keep V and the products in cache while reading U few times.
//   forward:          y  = conv(x, w)
//   backward data:    dx = conv(dy, w flipped, input and output channels swapped), pad r-1-p
//   backward weights: dU = sum over tiles of V^T (A dY A^T), then dw += G^T dU G
// Numerics: Winograd rounds differently from the direct sum (errors ~1e-6 relative to the
// largest products; tests hold it to the direct kernel). Bits do not depend on the order the
// threads run in, but the weights' gradient sums per-thread partial sums, so it depends on the
// number of threads, as oneDNN's does.

#include <algorithm>
#include <cstring>

#include "device/cpu/dnnl_activation.h"
#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"
#include "device/cpu/thin_product.h"
#include "device/cpu/thread_blocks.h"
#include "device/cpu/winograd_tiles.h"

namespace tandem::cpu {
namespace {

namespace wg = winograd;

// One pass as the tiles see it: `in` (n x h x w x cin) by r x r filters into `out` (n x out_h x
// out_w x cout), padded by pad_h/pad_w, in m x m output tiles.
struct TileGrid {
    std::int64_t n, h, w, cin, cout, pad_h, pad_w, out_h, out_w;
    int m, r;  // output tile m x m, filter r x r
    std::int64_t elements() const { return (m + r - 1) * (m + r - 1); }  // a*a
    std::int64_t tiles_h() const { return (out_h + m - 1) / m; }
    std::int64_t tiles_w() const { return (out_w + m - 1) / m; }
    std::int64_t tiles() const { return n * tiles_h() * tiles_w(); }
    // The rows of input channels in V and of output channels in U, the products and their
    // gradients: whole vectors, the lanes past the channels zero, so the thin products'
    // register blocks take any cout and the transforms store whole vectors (AVX's masked
    // stores are slow on Zen 3).
    std::int64_t cin_row() const { return (cin + wg::kVec - 1) / wg::kVec * wg::kVec; }
    std::int64_t cout_row() const { return (cout + wg::kVec - 1) / wg::kVec * wg::kVec; }
    // Image, and top-left output row and column, of tile t.
    void origin(std::int64_t t, std::int64_t& image, std::int64_t& y, std::int64_t& x) const {
        const std::int64_t per_image = tiles_h() * tiles_w();
        image = t / per_image;
        y = (t % per_image) / tiles_w() * m;
        x = t % tiles_w() * m;
    }
};

// The m giving fewer multiplications for this output: for 3x3 filters F(4x4) unless the output
// is tiny; 5x5 filters have F(2x2) alone.
int best_m(std::int64_t out_h, std::int64_t out_w, int r) {
    if (r == 5) return 2;
    const auto mults = [&](std::int64_t m) {
        return (m + 2) * (m + 2) * ((out_h + m - 1) / m) * ((out_w + m - 1) / m);
    };
    return mults(4) <= mults(2) ? 4 : 2;
}

// Writes the transformed input tiles [first, first + count) into v (count x a*a x cin_row).
template <int M, int R>
void transform_input(const TileGrid& g, const float* in, std::int64_t first, std::int64_t count,
                     float* v) {
    using T = wg::Matrices<M, R>;
    constexpr int a = T::a;
    wg::Vec d[a * a], out[a * a];
    for (std::int64_t k = 0; k < count; ++k) {
        std::int64_t image, y0, x0;
        g.origin(first + k, image, y0, x0);
        y0 -= g.pad_h;
        x0 -= g.pad_w;
        const float* at[a * a];  // each element's channels, or null past the edge
        for (int i = 0; i < a; ++i)
            for (int j = 0; j < a; ++j) {
                const std::int64_t y = y0 + i, x = x0 + j;
                at[i * a + j] = y >= 0 && y < g.h && x >= 0 && x < g.w
                                    ? in + ((image * g.h + y) * g.w + x) * g.cin
                                    : nullptr;
            }
        for (std::int64_t c = 0; c < g.cin; c += wg::kVec) {
            const int lanes = static_cast<int>(std::min<std::int64_t>(wg::kVec, g.cin - c));
            for (int e = 0; e < a * a; ++e) d[e] = at[e] ? wg::load(at[e] + c, lanes) : wg::Vec{};
            wg::sandwich<a, a, T::bt>(d, out);
            for (int xi = 0; xi < a * a; ++xi)
                wg::store(v + (k * a * a + xi) * g.cin_row() + c, out[xi], wg::kVec);
        }
    }
}

// Turns the products (count x a*a x cout_row) of tiles [first, first + count) into output blocks,
// adding the bias when there is one; blocks past the output's edge are cut. The blocks go out
// in streaming stores (the caller ends with vec::streaming_done): the output is new memory the
// caches dropped long ago, and reading each line in first is part of why later convolutions'
// forwards run slower (four identical 64-channel ones in a row, one thread: 1.15-1.20, 1.36-1.44,
// 1.58-1.65, 1.61-1.67 ms; streaming: 1.09-1.12, 1.40-1.48, 1.41-1.45, 1.42-1.48). Whole steps,
// alternating pairs: resnet20 +2 to +3% on one thread, +1 to +6% on two; smallbn +4% and +6 to
// +9%; alexnet64 -2 to +3%.
template <int M, int R>
void transform_output(const TileGrid& g, const float* product, std::int64_t first,
                      std::int64_t count, const float* bias, float* out) {
    using T = wg::Matrices<M, R>;
    constexpr int a = T::a;
    wg::Vec e[a * a], tmp[M * a], y[M * M];
    for (std::int64_t k = 0; k < count; ++k) {
        std::int64_t image, y0, x0;
        g.origin(first + k, image, y0, x0);
        const int rows = static_cast<int>(std::min<std::int64_t>(M, g.out_h - y0));
        const int cols = static_cast<int>(std::min<std::int64_t>(M, g.out_w - x0));
        for (std::int64_t c = 0; c < g.cout; c += wg::kVec) {
            const int lanes = static_cast<int>(std::min<std::int64_t>(wg::kVec, g.cout - c));
            for (int xi = 0; xi < a * a; ++xi)
                e[xi] = wg::load(product + (k * a * a + xi) * g.cout_row() + c, wg::kVec);
            wg::left<M, a, a, T::at>(e, tmp);
            wg::right<M, a, M, T::at>(tmp, y);
            const wg::Vec b = bias ? wg::load(bias + c, lanes) : wg::Vec{};
            for (int i = 0; i < rows; ++i)
                for (int j = 0; j < cols; ++j)
                    vec::store_streaming(
                        out + ((image * g.out_h + y0 + i) * g.out_w + x0 + j) * g.cout + c,
                        bias ? y[i * M + j] + b : y[i * M + j], lanes);
        }
    }
}

// The output gradient's tiles [first, first + count) as A dY A^T, into z (count x a*a x cout_row);
// outputs past the edge count as zero.
template <int M, int R>
void transform_output_gradient(const TileGrid& g, const float* dy, std::int64_t first,
                               std::int64_t count, float* z) {
    using T = wg::Matrices<M, R>;
    constexpr int a = T::a;
    wg::Vec e[M * M], tmp[a * M], out[a * a];
    for (std::int64_t k = 0; k < count; ++k) {
        std::int64_t image, y0, x0;
        g.origin(first + k, image, y0, x0);
        const float* at[M * M];
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < M; ++j)
                at[i * M + j] = y0 + i < g.out_h && x0 + j < g.out_w
                                    ? dy + ((image * g.out_h + y0 + i) * g.out_w + x0 + j) * g.cout
                                    : nullptr;
        for (std::int64_t c = 0; c < g.cout; c += wg::kVec) {
            const int lanes = static_cast<int>(std::min<std::int64_t>(wg::kVec, g.cout - c));
            for (int i = 0; i < M * M; ++i) e[i] = at[i] ? wg::load(at[i] + c, lanes) : wg::Vec{};
            wg::left<a, M, M, T::a_>(e, tmp);
            wg::right<a, M, a, T::a_>(tmp, out);
            for (int xi = 0; xi < a * a; ++xi)
                wg::store(z + (k * a * a + xi) * g.cout_row() + c, out[xi], wg::kVec);
        }
    }
}

// U = G w G^T for a pass from `inputs` to `outputs` channels (u: a*a x inputs x row, the
// lanes past `outputs` zero). Forward reads w[o][i]; backward data (flipped) reads w[i][o]
// rotated by 180 degrees.
template <int M, int R>
void transform_filters(const float* w, std::int64_t inputs, std::int64_t outputs, std::int64_t row,
                       bool flipped, float* u) {
    using T = wg::Matrices<M, R>;
    constexpr int a = T::a;
#pragma omp parallel for
    for (std::int64_t i = 0; i < inputs; ++i) {
        wg::Vec g[R * R], tmp[a * R], out[a * a];
        for (std::int64_t o0 = 0; o0 < outputs; o0 += wg::kVec) {
            const int lanes = static_cast<int>(std::min<std::int64_t>(wg::kVec, outputs - o0));
            for (int k = 0; k < R * R; ++k) {
                g[k] = wg::Vec{};
                for (int c = 0; c < lanes; ++c) {
                    const std::int64_t o = o0 + c;
                    g[k][c] = flipped ? w[(i * outputs + o) * R * R + R * R - 1 - k]
                                      : w[(o * inputs + i) * R * R + k];
                }
            }
            wg::left<a, R, R, T::g>(g, tmp);
            wg::right<a, R, a, T::g>(tmp, out);
            for (int xi = 0; xi < a * a; ++xi)
                wg::store(u + (xi * inputs + i) * row + o0, out[xi], wg::kVec);
        }
    }
}

// dw[o][i] += G^T dU G (du: a*a x inputs x row).
template <int M, int R>
void add_filter_gradient(const float* du, std::int64_t inputs, std::int64_t outputs,
                         std::int64_t row, float* dw) {
    using T = wg::Matrices<M, R>;
    constexpr int a = T::a;
#pragma omp parallel for
    for (std::int64_t i = 0; i < inputs; ++i) {
        wg::Vec e[a * a], tmp[R * a], g[R * R];
        for (std::int64_t o0 = 0; o0 < outputs; o0 += wg::kVec) {
            const int lanes = static_cast<int>(std::min<std::int64_t>(wg::kVec, outputs - o0));
            for (int xi = 0; xi < a * a; ++xi)
                e[xi] = wg::load(du + (xi * inputs + i) * row + o0, lanes);
            wg::left<R, a, a, T::gt>(e, tmp);
            wg::right<R, a, R, T::gt>(tmp, g);
            for (int k = 0; k < R * R; ++k)
                for (int c = 0; c < lanes; ++c) dw[((o0 + c) * inputs + i) * R * R + k] += g[k][c];
        }
    }
}

std::int64_t round_up(std::int64_t bytes) {
    return (bytes + 63) / 64 * 64;
}

class Conv2dWinograd final : public Conv2dKernel {
public:
    Conv2dWinograd(Device& device, const Conv2dConfig& c)
        : device_(as_cpu(device)), config_(c), threads_(std::max(1, device.threads())) {
        const int r = static_cast<int>(c.kernel_h);
        forward_ = {c.n,     c.h,     c.w,       c.c,       c.out_channels,
                    c.pad_h, c.pad_w, c.out_h(), c.out_w(), best_m(c.out_h(), c.out_w(), r),
                    r};
        data_ = {c.n,
                 c.out_h(),
                 c.out_w(),
                 c.out_channels,
                 c.c,
                 r - 1 - c.pad_h,
                 r - 1 - c.pad_w,
                 c.h,
                 c.w,
                 best_m(c.h, c.w, r),
                 r};
        // Thin products: a chunk's V and products (a quarter of a MiB) stay in L2, U in L1.
        // Others: a chunk reads the whole of U, so it takes at least four times U's size in
        // tiles' worth of V and products, or a MiB, whichever is more. Never more than a fair
        // share of the tiles, so that every thread has work.
        const auto chunk_for = [&](const TileGrid& g) {
            const std::int64_t a2 = g.elements();
            const std::int64_t cout = g.cout_row();
            const std::int64_t reuse = 4 * g.cin * cout / (g.cin + cout);
            const std::int64_t floats = wg::thin(cout, g.cin) ? 1 << 16 : 1 << 18;
            const std::int64_t cache = floats / (a2 * (g.cin_row() + cout));
            const std::int64_t wanted = wg::thin(cout, g.cin) ? cache : std::max(reuse, cache);
            const std::int64_t fair = (g.tiles() + threads_ - 1) / threads_;
            return std::max<std::int64_t>(1, std::min(wanted, fair));
        };
        forward_chunk_ = chunk_for(forward_);
        data_chunk_ = chunk_for(data_);
    }

    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        run(forward_, forward_chunk_, src.data<float>(), weights.data<float>(), false,
            config_.bias ? bias.data<float>() : nullptr, dst.data<float>());
    }

    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        run(data_, data_chunk_, diff_dst.data<float>(), weights.data<float>(), true, nullptr,
            diff_src.data<float>());
    }

    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        if (forward_.r == 5)
            weights_pass<2, 5>(src, diff_dst, diff_weights, diff_bias);
        else if (forward_.m == 4)
            weights_pass<4, 3>(src, diff_dst, diff_weights, diff_bias);
        else
            weights_pass<2, 3>(src, diff_dst, diff_weights, diff_bias);
    }

private:
    // dU = sum over tiles of V^T (A dY A^T) per thread, the threads' sums added, dw += G^T dU G.
    template <int M, int R>
    void weights_pass(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                      Tensor& diff_bias) {
        const TileGrid& g = forward_;
        const std::int64_t a2 = g.elements(), chunk = forward_chunk_, cout = g.cout_row();
        const std::int64_t cin = g.cin_row();
        const std::int64_t du_floats = a2 * g.cin * cout;
        const std::int64_t per_thread =
            round_up((a2 * chunk * (cin + cout) + du_floats + g.cout) * sizeof(float));
        char* scratch = static_cast<char*>(
            activation_scratch(device_).for_calling_thread(threads_ * per_thread));
        const float* x = src.data<float>();
        const float* dy = diff_dst.data<float>();
        const std::int64_t rows = g.n * g.out_h * g.out_w;
        const TeamRun run = run_in_blocks(scratch, per_thread, threads_, [&](char* block) {
            auto* v = reinterpret_cast<float*>(block);
            float* z = v + a2 * chunk * cin;
            float* du = z + a2 * chunk * cout;
            float* db = du + du_floats;
            std::fill(du, du + du_floats + g.cout, 0.f);
            bool ok = true;
            own_share(g.tiles(), chunk, [&](std::int64_t first, std::int64_t count) {
                transform_input<M, R>(g, x, first, count, v);
                transform_output_gradient<M, R>(g, dy, first, count, z);
                for (std::int64_t xi = 0; xi < a2; ++xi)
                    ok &= wg::multiply({v + xi * cin, 1, a2 * cin}, {z + xi * cout, a2 * cout},
                                       g.cin, cout, count, true, {du + xi * g.cin * cout, cout});
            });
            if (config_.bias) {
#pragma omp for schedule(static)
                for (std::int64_t r = 0; r < rows; ++r)
                    for (std::int64_t c = 0; c < g.cout; ++c) db[c] += dy[r * g.cout + c];
            }
            return ok;
        });
        TANDEM_CHECK_AS(BackendError, !run.failed) << "dnnl_sgemm failed in a Winograd convolution";
        // The threads' partial sums, in thread order, into the first thread's.
        auto* first = reinterpret_cast<float*>(scratch);
        for (int t = 1; t < run.team; ++t) {
            const auto* other = reinterpret_cast<const float*>(scratch + t * per_thread);
            const std::int64_t du_at = a2 * chunk * (cin + cout);
#pragma omp parallel for num_threads(threads_) if (du_floats > kParallelMin)
            for (std::int64_t e = du_at; e < du_at + du_floats + g.cout; ++e) first[e] += other[e];
        }
        const float* du = first + a2 * chunk * (cin + cout);
        add_filter_gradient<M, R>(du, g.cin, g.cout, cout, diff_weights.data<float>());
        if (config_.bias) {
            float* b = diff_bias.data<float>();
            for (std::int64_t c = 0; c < g.cout; ++c) b[c] += du[du_floats + c];
        }
    }

    // One pass of tiles: out = conv(in, w) on grid g (backward data: `flipped` weights).
    void run(const TileGrid& g, std::int64_t chunk, const float* in, const float* w, bool flipped,
             const float* bias, float* out) {
        if (g.r == 5)
            run_tiles<2, 5>(g, chunk, in, w, flipped, bias, out);
        else if (g.m == 4)
            run_tiles<4, 3>(g, chunk, in, w, flipped, bias, out);
        else
            run_tiles<2, 3>(g, chunk, in, w, flipped, bias, out);
    }

    template <int M, int R>
    void run_tiles(const TileGrid& g, std::int64_t chunk, const float* in, const float* w,
                   bool flipped, const float* bias, float* out) {
        const std::int64_t a2 = g.elements(), cout = g.cout_row();
        const std::int64_t u_bytes = round_up(a2 * g.cin * cout * sizeof(float));
        const std::int64_t per_thread = round_up(a2 * chunk * (g.cin_row() + cout) * sizeof(float));
        char* scratch = static_cast<char*>(
            activation_scratch(device_).for_calling_thread(u_bytes + threads_ * per_thread));
        auto* u = reinterpret_cast<float*>(scratch);
        transform_filters<M, R>(w, g.cin, g.cout, cout, flipped, u);
        const TeamRun run =
            run_in_blocks(scratch + u_bytes, per_thread, threads_, [&](char* block) {
                auto* v = reinterpret_cast<float*>(block);
                float* product = v + a2 * chunk * g.cin_row();
                bool ok = true;
                own_share(g.tiles(), chunk, [&](std::int64_t first, std::int64_t count) {
                    transform_input<M, R>(g, in, first, count, v);
                    for (std::int64_t xi = 0; xi < a2; ++xi)
                        ok &= wg::multiply({v + xi * g.cin_row(), a2 * g.cin_row(), 1},
                                           {u + xi * g.cin * cout, cout}, count, cout, g.cin, false,
                                           {product + xi * cout, a2 * cout});
                    transform_output<M, R>(g, product, first, count, bias, out);
                });
                vec::streaming_done();
                return ok;
            });
        TANDEM_CHECK_AS(BackendError, !run.failed) << "dnnl_sgemm failed in a Winograd convolution";
    }

    CpuDevice& device_;
    Conv2dConfig config_;
    int threads_;
    TileGrid forward_{}, data_{};
    std::int64_t forward_chunk_ = 1, data_chunk_ = 1;
};

}  // namespace

bool winograd_fits(const Conv2dConfig& c) {
    return c.layout == Layout::channels_last && c.kernel_h == c.kernel_w &&
           (c.kernel_h == 3 || c.kernel_h == 5) && c.stride_h == 1 && c.stride_w == 1 &&
           c.groups == 1 && c.pad_h < c.kernel_h && c.pad_w < c.kernel_w && c.out_h() > 0 &&
           c.out_w() > 0;
}

std::unique_ptr<Conv2dKernel> make_conv2d_winograd(Device& device, const Conv2dConfig& config) {
    TANDEM_CHECK_AS(BackendError, winograd_fits(config))
        << "the winograd convolution takes 3x3 or 5x5 filters at stride 1, one group, padding "
           "less than the filter, on channels-last activations";
    return std::make_unique<Conv2dWinograd>(device, config);
}

// Below two of oneDNN's vectors of channels its direct kernels beat the tiles. On AVX2 (8 floats
// a vector) the transforms cost more than the multiplications saved below 16 channels. On
// AVX-512 (16: Zen 5, one and two threads, batch 128) oneDNN's kernels read 16 channels in one
// nChw16c block, which is the nhwc tensor itself: ResNet-20's 16 -> 16 blocks took 7-9% less
// time a step on them than on Winograd's 16-channel vectors (23.3 ms -> 21.6 one thread, 13.7
// -> 12.4 two); at 32 channels Winograd took 19-23% less (14.7 against 18.2, 8.5 against 10.4).
// A pass whose tiles
// save less than half of the direct form's multiplications is left to the others: LeNet-5's
// 20 -> 50 backward data, a full convolution of its 8x8 gradient padded by 4 (81% of the
// multiplications, most of them on padding), took 6.6 ms against gemm's 2.3. Channels in
// partial vectors (LeNet-5's 20 and 50) are padded to whole vectors in V, U and the products:
// that layer's forward and weights' gradient (36% of the multiplications) ran 10% and 30%
// faster than on the best of oneDNN and gemm.
std::int64_t winograd_min_channels(int vector_floats) {
    return std::max<std::int64_t>(16, 2 * vector_floats);
}

bool winograd_pays(const Conv2dConfig& c, ConvPass pass, int vector_floats) {
    const std::int64_t least = winograd_min_channels(vector_floats);
    if (!winograd_fits(c) || c.c < least || c.out_channels < least) return false;
    // Backward data's tiles cover the input, the others' the output.
    const bool data = pass == ConvPass::data;
    const std::int64_t out_h = data ? c.h : c.out_h(), out_w = data ? c.w : c.out_w();
    const int r = static_cast<int>(c.kernel_h), m = best_m(out_h, out_w, r);
    const std::int64_t tiles = ((out_h + m - 1) / m) * ((out_w + m - 1) / m);
    const std::int64_t winograd = tiles * (m + r - 1) * (m + r - 1);
    const std::int64_t direct = c.out_h() * c.out_w() * r * r;
    return 2 * winograd <= direct;
}

}  // namespace tandem::cpu

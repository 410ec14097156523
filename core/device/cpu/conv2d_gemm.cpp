// A convolution as matrix products (im2col) on oneDNN's SGEMM. oneDNN 2.6's AVX2 kernels ran
// 1x1 convolutions 2-3x slower in every pass, and where channel counts are not whole vectors of
// 8 (LeNet-5's 20 -> 50 5x5 layer) they pad every channel block: that layer's backward data ran
// at 34 GFLOP/s and its weights at 44 on one Zen 3 core, where SGEMM runs these products at
// 65-80. Where the outputs end inside a vector SGEMM's forward was the slower one (gemm_pays).
//
// Rows of the column matrix are output pixels, its columns the taps' input channels in
// (kh, kw, c) order, so a row is k*k runs of c contiguous channels-last values (a 1x1
// convolution at stride 1 is its own column matrix):
//   forward:          col = the input at each row's taps (im2col), Y = col W^T;
//   backward data:    col = dY W (W: out_channels x taps*c), then each row is added into dX
//                     at its taps' input pixels (col2im);
//   backward weights: dW += dY^T col.
// Images go to the threads in chunks, as many to each thread. The weights' gradient sums
// per-thread partial sums in thread order: its bits depend on the number of threads, as
// oneDNN's do, not on the order the threads run in.

#include <algorithm>
#include <cstring>

#include "device/cpu/dnnl_activation.h"
#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"
#include "device/cpu/thread_blocks.h"

namespace tandem::cpu {
namespace {

// A chunk's column matrix: at most 4 MiB (L3). SGEMM ran LeNet-5's backward products 10-20%
// faster on 32-image chunks than on 8-image ones that fit L2.
constexpr std::int64_t kColumnFloats = 1 << 20;

std::size_t whole_lines(std::int64_t floats) {
    return static_cast<std::size_t>((floats * std::int64_t(sizeof(float)) + 63) / 64 * 64);
}

class Conv2dGemm final : public Conv2dKernel {
public:
    Conv2dGemm(Device& device, const Conv2dConfig& c)
        : device_(as_cpu(device)), c_(c), threads_(std::max(1, device.threads())),
          taps_(c.kernel_h * c.kernel_w), columns_(taps_ * c.c), pixels_(c.out_h() * c.out_w()),
          plain_(c.kernel_h == 1 && c.kernel_w == 1 && c.stride_h == 1 && c.stride_w == 1 &&
                 c.pad_h == 0 && c.pad_w == 0) {
        // As few chunks as keep each column matrix within kColumnFloats, in a multiple of the
        // threads so that each thread gets as many images.
        const std::int64_t floats = std::max<std::int64_t>(1, pixels_ * columns_);
        std::int64_t chunks =
            std::max<std::int64_t>(threads_, (c.n * floats + kColumnFloats - 1) / kColumnFloats);
        chunks = (chunks + threads_ - 1) / threads_ * threads_;
        images_per_chunk_ = std::max<std::int64_t>(1, (c.n + chunks - 1) / chunks);
        column_bytes_ = plain_ ? 0 : whole_lines(images_per_chunk_ * pixels_ * columns_);
    }

    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        const float* x = src.data<float>();
        const float* b = c_.bias ? bias.data<float>() : nullptr;
        float* y = dst.data<float>();
        const std::int64_t outputs = c_.out_channels;
        // W as (kh, kw, c) x out_channels: w[o][i][t] at packed[t * c + i][o].
        over_chunks(weights, 1, outputs, "forward",
                    [&](std::int64_t first, std::int64_t rows, const float* packed, float* col) {
                        float* chunk_y = y + first * pixels_ * outputs;
                        const bool done =
                            dnnl_sgemm('N', 'N', rows, outputs, columns_, 1.f,
                                       columns(first, x, col), columns_, packed, outputs, 0.f,
                                       chunk_y, outputs) == dnnl_success;
                        if (b)
                            for (std::int64_t r = 0; r < rows; ++r)
                                for (std::int64_t o = 0; o < outputs; ++o)
                                    chunk_y[r * outputs + o] += b[o];
                        return done;
                    });
    }

    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        const float* dy = diff_dst.data<float>();
        float* dx = diff_src.data<float>();
        const std::int64_t outputs = c_.out_channels;
        // W as out_channels x (kh, kw, c): w[o][i][t] at packed[o][t * c + i].
        over_chunks(weights, columns_, 1, "backward",
                    [&](std::int64_t first, std::int64_t rows, const float* packed, float* col) {
                        // A 1x1 convolution's column matrix is its input's gradient itself.
                        float* to = plain_ ? dx + first * pixels_ * columns_ : col;
                        const bool done =
                            dnnl_sgemm('N', 'N', rows, columns_, outputs, 1.f,
                                       dy + first * pixels_ * outputs, outputs, packed, columns_,
                                       0.f, to, columns_) == dnnl_success;
                        if (!plain_) add_columns(first, col, dx);
                        return done;
                    });
    }

    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        const std::int64_t outputs = c_.out_channels;
        const std::int64_t sums = outputs * (columns_ + 1);  // dW as out_channels x columns, db
        const std::size_t per_thread = column_bytes_ + whole_lines(sums);
        char* scratch = static_cast<char*>(
            activation_scratch(device_).for_calling_thread(threads_ * per_thread));
        const float* x = src.data<float>();
        const float* dy = diff_dst.data<float>();
        const TeamRun run = run_in_blocks(scratch, per_thread, threads_, [&](char* block) {
            auto* col = reinterpret_cast<float*>(block);
            float* sum = col + column_bytes_ / sizeof(float);
            std::fill(sum, sum + sums, 0.f);
            bool ok = true;
#pragma omp for schedule(static)
            for (std::int64_t first = 0; first < c_.n; first += images_per_chunk_) {
                const std::int64_t rows = std::min(images_per_chunk_, c_.n - first) * pixels_;
                const float* chunk_dy = dy + first * pixels_ * outputs;
                ok &= dnnl_sgemm('T', 'N', outputs, columns_, rows, 1.f, chunk_dy, outputs,
                                 columns(first, x, col), columns_, 1.f, sum,
                                 columns_) == dnnl_success;
                if (c_.bias) {
                    float* db = sum + outputs * columns_;
                    for (std::int64_t r = 0; r < rows; ++r)
                        for (std::int64_t o = 0; o < outputs; ++o)
                            db[o] += chunk_dy[r * outputs + o];
                }
            }
            return ok;
        });
        TANDEM_CHECK_AS(BackendError, !run.failed)
            << "dnnl_sgemm failed in a convolution's backward";
        // The threads' sums in thread order, sum[o][t * c + i] into dw[o][i][t].
        float* dw = diff_weights.data<float>();
        for (int t = 0; t < run.team; ++t) {
            const auto* sum =
                reinterpret_cast<const float*>(scratch + t * per_thread + column_bytes_);
            for (std::int64_t o = 0; o < outputs; ++o)
                for (std::int64_t i = 0; i < c_.c; ++i)
                    for (std::int64_t tap = 0; tap < taps_; ++tap)
                        dw[(o * c_.c + i) * taps_ + tap] += sum[o * columns_ + tap * c_.c + i];
            if (c_.bias)
                for (std::int64_t o = 0; o < outputs; ++o)
                    diff_bias.data<float>()[o] += sum[outputs * columns_ + o];
        }
    }

private:
    // The weights packed into the front of the device's per-call scratch (per_output and
    // per_column as in pack_weights), then body(first image, rows, packed, the thread's column
    // matrix) for every chunk, on the threads; body returns false when SGEMM failed.
    template <typename Body>
    void over_chunks(const Tensor& weights, std::int64_t per_output, std::int64_t per_column,
                     const char* pass, Body&& body) {
        const std::size_t packed_bytes = whole_lines(c_.out_channels * columns_);
        char* scratch = static_cast<char*>(activation_scratch(device_).for_calling_thread(
            packed_bytes + threads_ * column_bytes_));
        auto* packed = reinterpret_cast<float*>(scratch);
        pack_weights(weights.data<float>(), per_output, per_column, packed);
        const TeamRun run =
            run_in_blocks(scratch + packed_bytes, column_bytes_, threads_, [&](char* block) {
                bool ok = true;
#pragma omp for schedule(static)
                for (std::int64_t first = 0; first < c_.n; first += images_per_chunk_)
                    ok &= body(first, std::min(images_per_chunk_, c_.n - first) * pixels_, packed,
                               reinterpret_cast<float*>(block));
                return ok;
            });
        TANDEM_CHECK_AS(BackendError, !run.failed)
            << "dnnl_sgemm failed in a convolution's " << pass;
    }

    // w[o][i][t] (out_channels x c x taps) at packed[o * per_output + (t * c + i) * per_column]:
    // out_channels x columns (per_output = columns, per_column = 1) or its transpose.
    void pack_weights(const float* w, std::int64_t per_output, std::int64_t per_column,
                      float* packed) const {
        for (std::int64_t o = 0; o < c_.out_channels; ++o)
            for (std::int64_t i = 0; i < c_.c; ++i)
                for (std::int64_t t = 0; t < taps_; ++t)
                    packed[o * per_output + (t * c_.c + i) * per_column] =
                        w[(o * c_.c + i) * taps_ + t];
    }

    // Calls f(row, first tap, input pixel offset in floats or -1, taps) for the taps of every
    // output pixel of the chunk from image `first`, a kernel row at a time, in runs: at stride 1
    // consecutive taps of a row read consecutive input pixels, so a run inside the input is one
    // span of taps * c channels-last floats, and a run in the padding (offset -1) contributes 0.
    // Runs of one tap each at a wider stride. (Tap by tap, 20 floats at a time, LeNet-5's
    // 20 -> 50 layer took 1.53 ms for its input's gradient at batch 64 on one Zen 5 core; in
    // runs 1.04, and its weights' gradient 1.09 ms instead of 1.23.)
    template <typename F>
    void for_each_run(std::int64_t first, F&& f) const {
        const std::int64_t oh = c_.out_h(), ow = c_.out_w(), k = c_.kernel_w;
        const std::int64_t images = std::min(images_per_chunk_, c_.n - first);
        for (std::int64_t n = 0; n < images; ++n)
            for (std::int64_t y = 0; y < oh; ++y)
                for (std::int64_t x = 0; x < ow; ++x) {
                    const std::int64_t row = (n * oh + y) * ow + x;
                    const std::int64_t ix0 = x * c_.stride_w - c_.pad_w;  // tap 0's column
                    for (std::int64_t kh = 0; kh < c_.kernel_h; ++kh) {
                        const std::int64_t iy = y * c_.stride_h - c_.pad_h + kh, tap0 = kh * k;
                        const auto at = [&](std::int64_t kw) {
                            return (((first + n) * c_.h + iy) * c_.w + ix0 + kw) * c_.c;
                        };
                        if (iy < 0 || iy >= c_.h) {
                            f(row, tap0, std::int64_t{-1}, k);
                        } else if (c_.stride_w == 1) {
                            // Taps [lo, hi) fall inside the input's row.
                            const std::int64_t lo = std::clamp<std::int64_t>(-ix0, 0, k);
                            const std::int64_t hi = std::clamp<std::int64_t>(c_.w - ix0, lo, k);
                            if (lo > 0) f(row, tap0, std::int64_t{-1}, lo);
                            if (hi > lo) f(row, tap0 + lo, at(lo), hi - lo);
                            if (hi < k) f(row, tap0 + hi, std::int64_t{-1}, k - hi);
                        } else {
                            for (std::int64_t kw = 0; kw < k; ++kw) {
                                const bool inside = ix0 + kw >= 0 && ix0 + kw < c_.w;
                                f(row, tap0 + kw, inside ? at(kw) : -1, std::int64_t{1});
                            }
                        }
                    }
                }
    }

    // dx of the chunk's images = its column rows added at their taps' pixels.
    void add_columns(std::int64_t first, const float* col, float* dx) const {
        const std::int64_t c = c_.c, images = std::min(images_per_chunk_, c_.n - first);
        std::memset(dx + first * c_.h * c_.w * c, 0,
                    static_cast<std::size_t>(images * c_.h * c_.w * c) * sizeof(float));
        for_each_run(first,
                     [&](std::int64_t row, std::int64_t tap, std::int64_t at, std::int64_t taps) {
                         if (at < 0) return;
                         const float* __restrict from = col + row * columns_ + tap * c;
                         float* __restrict to = dx + at;
                         for (std::int64_t i = 0; i < taps * c; ++i) to[i] += from[i];
                     });
    }

    // The chunk's column matrix, each row its taps' input channels: gathered into col, or the
    // input itself for a 1x1 convolution.
    const float* columns(std::int64_t first, const float* x, float* col) const {
        if (plain_) return x + first * pixels_ * columns_;
        const std::int64_t c = c_.c;
        for_each_run(
            first, [&](std::int64_t row, std::int64_t tap, std::int64_t at, std::int64_t taps) {
                float* to = col + row * columns_ + tap * c;
                if (at < 0)
                    std::fill(to, to + taps * c, 0.f);
                else
                    std::memcpy(to, x + at, static_cast<std::size_t>(taps * c) * sizeof(float));
            });
        return col;
    }

    CpuDevice& device_;
    Conv2dConfig c_;
    int threads_;
    std::int64_t taps_, columns_, pixels_, images_per_chunk_ = 1;
    std::size_t column_bytes_ = 0;  // a thread's column matrix
    bool plain_;                    // 1x1, stride 1, no padding: the input is its own column matrix
};

}  // namespace

bool gemm_fits(const Conv2dConfig& c) {
    return c.layout == Layout::channels_last && c.groups == 1;
}

// Measured against oneDNN 2.6's AVX2 kernels on one and two Zen 3 cores: faster in every pass
// on 1x1 convolutions (2-3x), and 15-40% faster from 256 columns (LeNet-5's 20 -> 50 5x5: 500;
// ResNet's 3x3 stride-2 layers from 32 channels: 288 and more); as fast or slower on 16 -> 32
// 3x3 (144 columns), and several times slower on a first layer's few input channels, where
// SGEMM's products are too small. Where the outputs end inside a vector (LeNet-5's 50) SGEMM's
// forward was slower than oneDNN's.
bool gemm_pays(const Conv2dConfig& c, ConvPass pass) {
    const bool one_by_one = c.kernel_h == 1 && c.kernel_w == 1;
    if (pass == ConvPass::forward && c.out_channels % 8 != 0) return false;
    return gemm_fits(c) && c.c >= 8 && c.out_channels >= 16 &&
           (one_by_one || c.kernel_h * c.kernel_w * c.c >= 256);
}

std::unique_ptr<Conv2dKernel> make_conv2d_gemm(Device& device, const Conv2dConfig& config) {
    TANDEM_CHECK_AS(BackendError, gemm_fits(config))
        << "the gemm convolution takes one group on channels-last activations";
    return std::make_unique<Conv2dGemm>(device, config);
}

}  // namespace tandem::cpu

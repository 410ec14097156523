// Batch norm over channels-last tensors (see batch_norm_nhwc.cuh).
//
// Every kernel but the per-channel totals runs on the same grid: blocks of 32 channel lanes x
// 8 row lanes, grid.x over the channels and grid.y over slices of the rows. A warp reads 32
// neighbouring channels of one row (128 contiguous bytes), and each thread stays on one
// channel, so it loads that channel's parameters once.
#include <algorithm>

#include "device/cuda/batch_norm_nhwc.cuh"
#include "device/cuda/block_sum.cuh"

namespace tandem::cuda::kernels {
namespace {

constexpr int kLanes = 32;          // channels per block
constexpr int kRowLanes = 8;        // rows a block takes at once
constexpr int kRowsPerThread = 16;  // rows each thread sums, where the grid allows
constexpr int kMaxBlocks = 4096;    // enough to fill an H100 (132 SMs) several times over

struct Grid {
    dim3 blocks, threads;
    std::int64_t slices;
};

Grid grid_for(std::int64_t rows, std::int64_t channels) {
    const std::int64_t lanes = (channels + kLanes - 1) / kLanes;
    const std::int64_t wanted =
        (rows + kRowLanes * kRowsPerThread - 1) / (kRowLanes * kRowsPerThread);
    const std::int64_t slices =
        std::clamp<std::int64_t>(wanted, 1, std::max<std::int64_t>(1, kMaxBlocks / lanes));
    return {dim3(unsigned(lanes), unsigned(std::min<std::int64_t>(slices, 65535))),
            dim3(kLanes, kRowLanes), std::min<std::int64_t>(slices, 65535)};
}

enum class Sum { x, squared_deviation, backward };

// Each block's sums over its slice of rows, for its 32 channels: partials[slice][0 or 1][c]
// (for backward, [0] sums diff_dst and [1] diff_dst x̂).
template <Sum kind>
__global__ void slice_sums_kernel(const float* x, const float* dy, const float* mean,
                                  const float* var, float eps, std::int64_t rows,
                                  std::int64_t channels, double* partials) {
    const std::int64_t c = std::int64_t(blockIdx.x) * kLanes + threadIdx.x;
    float a = 0, b = 0;
    if (c < channels) {
        const float mu = kind == Sum::x ? 0.f : mean[c];
        const float inv = kind == Sum::backward ? rsqrtf(var[c] + eps) : 0.f;
        for (std::int64_t r = std::int64_t(blockIdx.y) * kRowLanes + threadIdx.y; r < rows;
             r += std::int64_t(gridDim.y) * kRowLanes) {
            const float v = x[r * channels + c];
            if constexpr (kind == Sum::x) {
                a += v;
            } else if constexpr (kind == Sum::squared_deviation) {
                a += (v - mu) * (v - mu);
            } else {
                const float g = dy[r * channels + c];
                a += g;
                b += g * (v - mu) * inv;
            }
        }
    }
    __shared__ float sa[kRowLanes][kLanes], sb[kRowLanes][kLanes];
    sa[threadIdx.y][threadIdx.x] = a;
    sb[threadIdx.y][threadIdx.x] = b;
    __syncthreads();
    if (threadIdx.y != 0 || c >= channels) return;
    double ta = 0, tb = 0;
    for (int k = 0; k < kRowLanes; ++k) {
        ta += sa[k][threadIdx.x];
        tb += sb[k][threadIdx.x];
    }
    double* slice = partials + std::int64_t(blockIdx.y) * 2 * channels;
    slice[c] = ta;
    if (kind == Sum::backward) slice[channels + c] = tb;
}

// One block per channel adds up the slices. x and squared_deviation write out[c] = sum / rows
// (the mean, the biased variance); backward keeps both sums in totals[0 or 1][c] for the
// diff_src kernel and adds them to the parameter gradients.
template <Sum kind>
__global__ void channel_totals_kernel(const double* partials, std::int64_t slices,
                                      std::int64_t channels, std::int64_t rows, float* out,
                                      double* totals, float* diff_gamma, float* diff_beta) {
    const std::int64_t c = blockIdx.x;
    double a = 0, b = 0;
    for (std::int64_t k = threadIdx.x; k < slices; k += blockDim.x) {
        a += partials[k * 2 * channels + c];
        if (kind == Sum::backward) b += partials[k * 2 * channels + channels + c];
    }
    a = block_sum(a);
    if (kind == Sum::backward) b = block_sum(b);
    if (threadIdx.x != 0) return;
    if constexpr (kind == Sum::backward) {
        totals[c] = a;
        totals[channels + c] = b;
        diff_beta[c] += float(a);
        diff_gamma[c] += float(b);
    } else {
        out[c] = float(a / double(rows));
    }
}

__global__ void normalize_kernel(const float* x, const float* mean, const float* var, float eps,
                                 const float* gamma, const float* beta, float* y, std::int64_t rows,
                                 std::int64_t channels) {
    const std::int64_t c = std::int64_t(blockIdx.x) * kLanes + threadIdx.x;
    if (c >= channels) return;
    const float mu = mean[c], scale = gamma[c] * rsqrtf(var[c] + eps), shift = beta[c];
    for (std::int64_t r = std::int64_t(blockIdx.y) * kRowLanes + threadIdx.y; r < rows;
         r += std::int64_t(gridDim.y) * kRowLanes) {
        const std::int64_t i = r * channels + c;
        y[i] = (x[i] - mu) * scale + shift;
    }
}

// totals is null for constant statistics.
__global__ void diff_src_kernel(const float* x, const float* dy, const float* gamma,
                                const float* mean, const float* var, float eps,
                                const double* totals, float* dx, std::int64_t rows,
                                std::int64_t channels) {
    const std::int64_t c = std::int64_t(blockIdx.x) * kLanes + threadIdx.x;
    if (c >= channels) return;
    const float inv = rsqrtf(var[c] + eps), scale = gamma[c] * inv, mu = mean[c];
    const float mean_dy = totals ? float(totals[c] / double(rows)) : 0.f;
    const float mean_dy_xhat = totals ? float(totals[channels + c] / double(rows)) : 0.f;
    for (std::int64_t r = std::int64_t(blockIdx.y) * kRowLanes + threadIdx.y; r < rows;
         r += std::int64_t(gridDim.y) * kRowLanes) {
        const std::int64_t i = r * channels + c;
        dx[i] =
            totals ? scale * (dy[i] - mean_dy - (x[i] - mu) * inv * mean_dy_xhat) : scale * dy[i];
    }
}

}  // namespace

std::int64_t bn_nhwc_scratch_doubles(std::int64_t rows, std::int64_t channels) {
    return (grid_for(rows, channels).slices + 1) * 2 * channels;
}

void bn_nhwc_statistics(const float* src, std::int64_t rows, std::int64_t channels, float* mean,
                        float* variance, double* scratch, cudaStream_t stream) {
    const Grid g = grid_for(rows, channels);
    const auto totals = unsigned(channels);
    slice_sums_kernel<Sum::x><<<g.blocks, g.threads, 0, stream>>>(src, nullptr, nullptr, nullptr,
                                                                  0.f, rows, channels, scratch);
    channel_totals_kernel<Sum::x><<<totals, kBlockSumThreads, 0, stream>>>(
        scratch, g.slices, channels, rows, mean, nullptr, nullptr, nullptr);
    slice_sums_kernel<Sum::squared_deviation><<<g.blocks, g.threads, 0, stream>>>(
        src, nullptr, mean, nullptr, 0.f, rows, channels, scratch);
    channel_totals_kernel<Sum::squared_deviation><<<totals, kBlockSumThreads, 0, stream>>>(
        scratch, g.slices, channels, rows, variance, nullptr, nullptr, nullptr);
}

void bn_nhwc_normalize(const float* src, const float* mean, const float* variance, float epsilon,
                       const float* gamma, const float* beta, float* dst, std::int64_t rows,
                       std::int64_t channels, cudaStream_t stream) {
    const Grid g = grid_for(rows, channels);
    normalize_kernel<<<g.blocks, g.threads, 0, stream>>>(src, mean, variance, epsilon, gamma, beta,
                                                         dst, rows, channels);
}

void bn_nhwc_backward(const float* src, const float* diff_dst, const float* gamma,
                      const float* mean, const float* variance, float epsilon,
                      bool batch_statistics, float* diff_src, float* diff_gamma, float* diff_beta,
                      std::int64_t rows, std::int64_t channels, double* scratch,
                      cudaStream_t stream) {
    const Grid g = grid_for(rows, channels);
    double* totals = scratch + g.slices * 2 * channels;
    slice_sums_kernel<Sum::backward><<<g.blocks, g.threads, 0, stream>>>(
        src, diff_dst, mean, variance, epsilon, rows, channels, scratch);
    channel_totals_kernel<Sum::backward><<<unsigned(channels), kBlockSumThreads, 0, stream>>>(
        scratch, g.slices, channels, rows, nullptr, totals, diff_gamma, diff_beta);
    diff_src_kernel<<<g.blocks, g.threads, 0, stream>>>(
        src, diff_dst, gamma, mean, variance, epsilon, batch_statistics ? totals : nullptr,
        diff_src, rows, channels);
}

}  // namespace tandem::cuda::kernels

// Batch norm over channels-last tensors: our own kernels, since cuDNN's batch norm on nhwc
// float data ran at 2-4% of an H100's memory bandwidth (0.34-0.93 ms a pass over 128 x 32 x
// 28 x 28, spatial and spatial-persistent modes alike), which made it two thirds of a step.
//
// The tensor is `rows` x `channels` floats, channels fastest (rows = n x h x w). Per-channel
// sums go in two stages with a fixed order (no atomics), so results repeat bit for bit: each
// block sums a slice of rows for 32 channels into `scratch`, then one block per channel adds
// the slices up. Raw pointers and a stream only, as in kernels.cuh; the caller checks each
// launch. `scratch` holds bn_nhwc_scratch_doubles(rows, channels) doubles on the device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tandem::cuda::kernels {

std::int64_t bn_nhwc_scratch_doubles(std::int64_t rows, std::int64_t channels);

// Training statistics: each channel's mean and biased variance (two passes over x: the
// variance sums squared deviations from the mean, which loses nothing to cancellation).
void bn_nhwc_statistics(const float* src, std::int64_t rows, std::int64_t channels, float* mean,
                        float* variance, double* scratch, cudaStream_t stream);

// dst = (src - mean) / sqrt(variance + epsilon) * gamma + beta.
void bn_nhwc_normalize(const float* src, const float* mean, const float* variance, float epsilon,
                       const float* gamma, const float* beta, float* dst, std::int64_t rows,
                       std::int64_t channels, cudaStream_t stream);

// Backward with x̂ = (src - mean) / sqrt(variance + epsilon): diff_gamma += sum diff_dst x̂ and
// diff_beta += sum diff_dst (added, as the kernel contract says), and
//   batch statistics:    diff_src = gamma / std x (diff_dst - mean(diff_dst) - x̂ mean(diff_dst x̂))
//   constant statistics: diff_src = gamma / std x diff_dst   (evaluation mode)
void bn_nhwc_backward(const float* src, const float* diff_dst, const float* gamma,
                      const float* mean, const float* variance, float epsilon,
                      bool batch_statistics, float* diff_src, float* diff_gamma, float* diff_beta,
                      std::int64_t rows, std::int64_t channels, double* scratch,
                      cudaStream_t stream);

}  // namespace tandem::cuda::kernels

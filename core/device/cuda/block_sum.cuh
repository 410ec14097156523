// A block's sum of one double per thread, in a fixed tree order (so it repeats bit for bit).
// For blocks of up to kBlockSumThreads threads, a power of two; every thread gets the total.
#pragma once

namespace tandem::cuda::kernels {

constexpr int kBlockSumThreads = 256;

__device__ inline double block_sum(double v) {
    __shared__ double shared[kBlockSumThreads];
    shared[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
        __syncthreads();
    }
    const double total = shared[0];
    __syncthreads();  // the buffer is reused by a following call
    return total;
}

}  // namespace tandem::cuda::kernels

#include "device/cuda/cuda_allocator.h"

#include <cuda_runtime_api.h>

#include "device/cuda/check.h"
#include "device/cuda/cuda_device.h"

namespace tandem {

CudaAllocator::CudaAllocator(std::string device_name, std::size_t cap, int ordinal)
    : Allocator(std::move(device_name), cap), ordinal_(ordinal) {}

CudaAllocator::~CudaAllocator() {
    release_cache();
}

void* CudaAllocator::raw_allocate(std::size_t bytes) {
    DeviceGuard guard(ordinal_);
    void* ptr = nullptr;
    const cudaError_t status = cudaMalloc(&ptr, bytes);
    if (status == cudaErrorMemoryAllocation) {
        // Not sticky: clear it so the next check does not report it again. The base class
        // releases its cache, retries once, and then throws DeviceMemoryError with its text.
        cudaGetLastError();
        return nullptr;
    }
    TANDEM_CUDA_CALL(status);
    return ptr;  // 256-byte aligned: more than the 64 the Allocator contract promises
}

void CudaAllocator::raw_free(void* ptr) {
    // Runs from destructors (~CudaAllocator, ~CudaDevice): nothing here may throw, so no
    // DeviceGuard; a failure leaks the block to the driver, which reclaims it at exit.
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
    if (cudaSetDevice(ordinal_) == cudaSuccess) {
        // A cached block may still be read or written by queued kernels: wait for them before
        // the memory goes back to the driver. Only the cache release path comes here (rare).
        if (cudaDeviceSynchronize() == cudaSuccess) cudaFree(ptr);
    }
    if (previous >= 0 && previous != ordinal_) cudaSetDevice(previous);
    cudaGetLastError();
}

PinnedBuffer::~PinnedBuffer() {
    if (data_) cudaFreeHost(data_);
}

void* PinnedBuffer::reserve(std::size_t bytes) {
    if (bytes <= bytes_) return data_;
    if (data_) {
        TANDEM_CUDA_CALL(cudaFreeHost(data_));
        data_ = nullptr;
        bytes_ = 0;
    }
    TANDEM_CUDA_CALL(cudaHostAlloc(&data_, bytes, cudaHostAllocPortable));
    bytes_ = bytes;
    return data_;
}

}  // namespace tandem

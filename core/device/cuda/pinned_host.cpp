#include "device/cuda/pinned_host.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "device/cuda/check.h"

namespace tandem {

PinnedHostAllocator::~PinnedHostAllocator() {
    release_cache();
}

void* PinnedHostAllocator::raw_allocate(std::size_t bytes) {
    void* ptr = nullptr;
    // Portable: page-locked for every GPU of the process, not only the current one.
    const cudaError_t status = cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable);
    if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();  // not sticky, but leave no error behind for the next check
        return nullptr;
    }
    cuda::check_cuda(status, "cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable)");
    return ptr;  // page-aligned
}

void PinnedHostAllocator::raw_free(void* ptr) {
    // Runs from destructors: nothing here may throw. Blocks reach here only from the cache,
    // after every copy that used them returned (host copies synchronise).
    cudaFreeHost(ptr);
    cudaGetLastError();
}

PinnedHostDevice::PinnedHostDevice(const Device& gpu, std::size_t cap)
    : Device(DeviceKind::cpu, gpu.index(), 1, gpu.name() + " pinned host") {
    allocator_ = std::make_unique<PinnedHostAllocator>(name(), cap);
}

void PinnedHostDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) {
    std::memcpy(dst, src, bytes);
}

void PinnedHostDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) {
    std::memcpy(dst, src, bytes);
}

bool is_pinned_host_memory(const void* ptr) {
    cudaPointerAttributes attributes{};
    // Since CUDA 11 a pointer the runtime does not know (pageable host memory) is reported as
    // cudaMemoryTypeUnregistered, with success.
    TANDEM_CUDA_CALL(cudaPointerGetAttributes(&attributes, ptr));
    return attributes.type == cudaMemoryTypeHost;
}

}  // namespace tandem

// Device memory and pinned host memory for the CUDA backend.
//
// CudaAllocator is the core Allocator (cap, peak statistics, size-class cache, the same
// out-of-memory error text as the CPU's) over cudaMalloc; never managed memory, whose page
// faults would make memory caps and timings meaningless. PinnedBuffer is page-locked host
// memory (cudaHostAlloc) that DMA copies read and write directly.
#pragma once

#include <cstddef>
#include <string>

#include "device/allocator.h"

namespace tandem {

class CudaAllocator final : public Allocator {
public:
    CudaAllocator(std::string device_name, std::size_t cap, int ordinal);
    ~CudaAllocator() override;

protected:
    // Null when the GPU is out of memory (the base then releases its cache and retries, and
    // throws DeviceMemoryError); BackendError naming the call for any other failure.
    void* raw_allocate(std::size_t bytes) override;
    void raw_free(void* ptr) override;

private:
    int ordinal_;
};

class PinnedBuffer {
public:
    PinnedBuffer() = default;
    ~PinnedBuffer();
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;

    // Grows to at least `bytes` (contents are not kept) and returns the memory.
    void* reserve(std::size_t bytes);
    void* data() const { return data_; }
    std::size_t bytes() const { return bytes_; }

private:
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
};

}  // namespace tandem

// A GPU's pinned host memory as a device (issue 7: pinned host buffers for input batches).
//
// Page-locked host memory (cudaHostAlloc) is what the GPU's copy engines read and write
// directly: a batch prepared there crosses to the GPU in one DMA copy, where pageable memory
// is first copied into a staging buffer, chunk by chunk. The loader prepares the batches of a
// GPU here (CudaDevice::pinned_host()). It is a device of its own so that tensors can live in
// it with the usual allocator: a cap (page-locked memory is taken from the whole machine, so
// it is kept small), peak statistics, a cache of freed blocks (cudaHostAlloc is slow), and an
// out-of-memory error naming it. It runs no work: it has no worker.
#pragma once

#include <cstddef>
#include <string>

#include "device/allocator.h"
#include "device/device.h"

namespace tandem {

class PinnedHostAllocator final : public Allocator {
public:
    using Allocator::Allocator;
    ~PinnedHostAllocator() override;

protected:
    // Null when no more memory can be locked (the base then releases its cache, retries and
    // throws DeviceMemoryError); BackendError naming the call for any other failure.
    void* raw_allocate(std::size_t bytes) override;
    void raw_free(void* ptr) override;
};

class PinnedHostDevice final : public Device {
public:
    // "cuda:N pinned host", capped at `cap` bytes.
    PinnedHostDevice(const Device& gpu, std::size_t cap);
    ~PinnedHostDevice() override = default;

    bool host_accessible() const override { return true; }
    void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
    void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
};

// Whether `ptr` points into page-locked host memory (cudaPointerGetAttributes).
bool is_pinned_host_memory(const void* ptr);

}  // namespace tandem

#include "device/allocator.h"

#include <cstdlib>

#include "base/error.h"
#include "base/format.h"

namespace tandem {

Allocator::Allocator(std::string device_name, std::size_t cap)
    : device_name_(std::move(device_name)) {
    stats_.cap = cap;
}

Allocator::~Allocator() = default;

std::size_t Allocator::round_up(std::size_t bytes) {
    // 256-byte granules keep the cache's size classes few and every block 64-byte aligned.
    constexpr std::size_t kGranule = 256;
    return (std::max<std::size_t>(bytes, 1) + kGranule - 1) / kGranule * kGranule;
}

void* Allocator::allocate(std::size_t bytes) {
    const std::size_t size = round_up(bytes);
    std::lock_guard lock(mutex_);
    if (stats_.in_use + size > stats_.cap) {
        TANDEM_THROW(DeviceMemoryError)
            << device_name_ << " out of memory: requested " << format_bytes(double(bytes))
            << ", in use " << format_bytes(double(stats_.in_use)) << ", cap "
            << format_bytes(double(stats_.cap));
    }
    void* ptr = nullptr;
    if (auto it = cache_.find(size); it != cache_.end()) {
        ptr = it->second;
        cache_.erase(it);
        stats_.cached -= size;
    } else {
        // Keep in_use + cached within the cap: free the cache before growing past it.
        if (stats_.in_use + stats_.cached + size > stats_.cap) release_cache_locked();
        ptr = raw_allocate(size);
        if (!ptr) {
            release_cache_locked();
            ptr = raw_allocate(size);
        }
        TANDEM_CHECK_AS(DeviceMemoryError, ptr != nullptr)
            << device_name_ << ": the system refused " << format_bytes(double(bytes)) << " (in use "
            << format_bytes(double(stats_.in_use)) << ", cap " << format_bytes(double(stats_.cap))
            << ")";
    }
    stats_.in_use += size;
    stats_.peak = std::max(stats_.peak, stats_.in_use);
    ++stats_.allocations;
    return ptr;
}

void Allocator::deallocate(void* ptr, std::size_t bytes) {
    if (!ptr) return;
    const std::size_t size = round_up(bytes);
    std::lock_guard lock(mutex_);
    stats_.in_use -= size;
    cache_.emplace(size, ptr);
    stats_.cached += size;
}

MemoryStats Allocator::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void Allocator::set_cap(std::size_t cap) {
    std::lock_guard lock(mutex_);
    stats_.cap = cap;
}

void Allocator::reset_peak() {
    std::lock_guard lock(mutex_);
    stats_.peak = stats_.in_use;
}

void Allocator::release_cache() {
    std::lock_guard lock(mutex_);
    release_cache_locked();
}

void Allocator::release_cache_locked() {
    for (auto& [size, ptr] : cache_) raw_free(ptr);
    cache_.clear();
    stats_.cached = 0;
}

HostAllocator::~HostAllocator() {
    release_cache();
}

void* HostAllocator::raw_allocate(std::size_t bytes) {
    return std::aligned_alloc(64, bytes);
}

void HostAllocator::raw_free(void* ptr) {
    std::free(ptr);
}

}  // namespace tandem

// Allocator: device memory with a cap and peak statistics.
//
// Every tensor's storage comes from its device's allocator, so a device behaves like a GPU
// with a fixed amount of memory: a request past the cap fails with a DeviceMemoryError that
// names the device, the request, the memory in use and the cap. Freed blocks are cached by
// size and reused (training allocates the same sizes every step), and the cache is released
// before a request is refused.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace tandem {

struct MemoryStats {
    std::size_t in_use = 0;  // bytes held by live tensors
    std::size_t peak = 0;    // highest in_use since the last reset_peak()
    std::size_t cached = 0;  // bytes freed but kept for reuse
    std::size_t cap = 0;     // the most in_use may reach
    std::size_t allocations = 0;
};

class Allocator {
public:
    Allocator(std::string device_name, std::size_t cap);
    virtual ~Allocator();
    Allocator(const Allocator&) = delete;
    Allocator& operator=(const Allocator&) = delete;

    // Returns at least `bytes` bytes, 64-byte aligned. Throws DeviceMemoryError past the cap.
    void* allocate(std::size_t bytes);
    void deallocate(void* ptr, std::size_t bytes);

    MemoryStats stats() const;
    void set_cap(std::size_t cap);
    void reset_peak();
    // Returns cached blocks to the system.
    void release_cache();

    const std::string& device_name() const { return device_name_; }

protected:
    virtual void* raw_allocate(std::size_t bytes) = 0;
    virtual void raw_free(void* ptr) = 0;

private:
    static std::size_t round_up(std::size_t bytes);
    void release_cache_locked();

    std::string device_name_;
    mutable std::mutex mutex_;
    MemoryStats stats_;
    std::multimap<std::size_t, void*> cache_;
};

// Host memory through aligned_alloc.
class HostAllocator final : public Allocator {
public:
    using Allocator::Allocator;
    ~HostAllocator() override;

protected:
    void* raw_allocate(std::size_t bytes) override;
    void raw_free(void* ptr) override;
};

}  // namespace tandem

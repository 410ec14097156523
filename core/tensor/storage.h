// Storage: one block of device memory, returned to the device's allocator when the last
// tensor that shares it goes away.
#pragma once

#include <cstddef>
#include <memory>

namespace tandem {

class Device;

class Storage {
public:
    Storage(Device& device, std::size_t bytes);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;

    void* data() const { return data_; }
    std::size_t bytes() const { return bytes_; }
    Device& device() const { return *device_; }

private:
    // Keeps a shared-owned device (and so its allocator) alive while this block exists; null
    // for devices that are not shared-owned (statics, stack objects in tests).
    std::shared_ptr<Device> owner_;
    Device* device_;
    std::size_t bytes_;
    void* data_;
};

}  // namespace tandem

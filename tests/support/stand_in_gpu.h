// A device the host cannot read, played by one that keeps its memory on the host but says it
// does not (host_accessible() is false): code under test must go through copy_from_host and
// copy_to_host, as it would for a GPU, and the test can count what crossed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>

#include "device/allocator.h"
#include "device/cpu/cpu_device.h"
#include "device/device.h"
#include "device/worker.h"

namespace tandem::test {

class StandInGpu final : public Device {
public:
    explicit StandInGpu(int index, std::size_t cap = std::size_t(1) << 24)
        : Device(DeviceKind::cuda, index, 1) {
        allocator_ = std::make_unique<HostAllocator>(name(), cap);
        worker_ = std::make_unique<Worker>(name());
    }
    ~StandInGpu() override { worker_.reset(); }
    bool host_accessible() const override { return false; }
    void copy_from_host(void* dst, const void* src, std::size_t bytes) override {
        bytes_from_host += bytes;
        std::memcpy(dst, src, bytes);
    }
    void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
        std::memcpy(dst, src, bytes);
    }
    // Its "pinned" host memory: a CPU device of its own, so tests see what was put there.
    Device* pinned_host() override { return pinned.get(); }

    std::atomic<std::size_t> bytes_from_host{0};
    std::shared_ptr<CpuDevice> pinned = std::make_shared<CpuDevice>(index(), CpuDeviceOptions{});
};

}  // namespace tandem::test

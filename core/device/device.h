// Device: where tensors live and kernels run.
//
// A device has a kind (cpu, cuda), an index, an allocator with a memory cap, and one worker
// thread that runs its work in order. Several CPU devices on one machine behave like several
// GPUs: each has its own thread, its own capped memory and its own kernel thread count.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <typeindex>
#include <unordered_map>
#include <utility>

#include "device/allocator.h"
#include "device/precision.h"
#include "device/worker.h"

namespace tandem {

enum class DeviceKind { cpu, cuda };

std::string_view device_kind_name(DeviceKind kind);

// Devices are normally owned through shared_ptr (T.devices, the engine): tensors then keep
// their device alive, so a net's kernels and tensors may outlive the handle that made them.
class Device : public std::enable_shared_from_this<Device> {
public:
    virtual ~Device() = default;
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    DeviceKind kind() const { return kind_; }
    int index() const { return index_; }
    // "cpu:0", "cuda:1": used in every message about this device.
    const std::string& name() const { return name_; }

    Allocator& allocator() { return *allocator_; }
    Worker& worker() { return *worker_; }
    // Threads this device's kernels use.
    int threads() const { return threads_; }

    // Whether the host can read this device's memory through a plain pointer.
    virtual bool host_accessible() const = 0;
    // Copies raw bytes into this device's memory from host memory, and back.
    virtual void copy_from_host(void* dst, const void* src, std::size_t bytes) = 0;
    virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
    // Copies raw bytes into this device's memory from `src_device`'s memory, directly (a GPU
    // peer copy, say). Returns false when this device has no such path; the caller then goes
    // through host memory. (optional)
    virtual bool copy_from_device(void* /*dst*/, Device& /*src_device*/, const void* /*src*/,
                                  std::size_t /*bytes*/) {
        return false;
    }
    // Copies raw bytes from one place in this device's memory to another, after the work
    // queued on the device before the call and before what is queued after it (a GPU: in order
    // on its compute stream). Host-accessible devices: a memcpy. The gradient buckets pack
    // and unpack with it from the reduce lanes' threads.
    virtual void copy_within(void* dst, const void* src, std::size_t bytes);
    // Waits for all work this device has started (CPU kernels are synchronous: nothing to do).
    virtual void synchronize() {}
    // Host memory that this device's copies read and write directly, as a device of its own
    // that runs no work (a GPU: page-locked memory): where data bound for this device is best
    // prepared, so that copy_from_host moves it without staging. Null where plain host memory
    // serves as well. (optional)
    virtual Device* pinned_host() { return nullptr; }

    // Why this device cannot compute convolutions and products in `precision`
    // (device/precision.h), as the end of a sentence naming the device's hardware; empty
    // when it can. Every device computes in fp32.
    virtual std::string precision_unavailable(Precision precision) const;

    // Deterministic kernels: every kernel built or run while this is on gives the same bits
    // for the same inputs, run after run (a GPU: no convolution algorithm that sums with
    // atomics, and algorithms from the library's heuristics rather than timed, since timing
    // may choose differently between runs and devices). The engine's deterministic mode turns
    // it on for its devices and leaves it on; CPU kernels are deterministic either way.
    void set_deterministic(bool on) { deterministic_.store(on, std::memory_order_relaxed); }
    bool deterministic() const { return deterministic_.load(std::memory_order_relaxed); }

    // A per-device singleton of type T owned by code above this layer (the tensor-ops kernel),
    // built by `make` on first use and destroyed with the device.
    template <class T>
    T& attachment(const std::function<std::unique_ptr<T>()>& make) {
        std::lock_guard lock(attachments_mutex_);
        auto& slot = attachments_[std::type_index(typeid(T))];
        if (!slot) slot = std::shared_ptr<T>(make());
        return *static_cast<T*>(slot.get());
    }

protected:
    Device(DeviceKind kind, int index, int threads)
        : kind_(kind), index_(index), threads_(threads) {
        // A negative index marks the host device that holds parameters before placement.
        name_ =
            index < 0 ? "host" : std::string(device_kind_name(kind)) + ":" + std::to_string(index);
    }
    // A device whose name is not its kind and index (a GPU's pinned host memory).
    Device(DeviceKind kind, int index, int threads, std::string name)
        : kind_(kind), index_(index), threads_(threads), name_(std::move(name)) {}
    std::unique_ptr<Allocator> allocator_;
    std::unique_ptr<Worker> worker_;
    // Cleared by subclasses' destructors before the resources the attachments use go away.
    std::unordered_map<std::type_index, std::shared_ptr<void>> attachments_;

private:
    std::mutex attachments_mutex_;
    std::atomic<bool> deterministic_{false};
    DeviceKind kind_;
    int index_;
    int threads_;
    std::string name_;
};

}  // namespace tandem

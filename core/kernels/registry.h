// KernelRegistry: which implementation of each kernel kind runs on which device kind.
//
// Each kernel kind K (see kernels/kernels.h) is an abstract class with a `Config` type and a
// `kName`. Backends register factories with explicit calls, one readable list per backend
// (device/cpu/register.cpp). The first implementation registered for a device kind is its
// default, so backends list their fast kernels before the `reference` ones. A failed lookup
// lists what exists.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <typeindex>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "device/device.h"

namespace tandem {

class KernelRegistry {
public:
    template <class K>
    using Factory = std::function<std::unique_ptr<K>(Device&, const typename K::Config&)>;

    // The registry with every backend compiled into this build registered. Defined in
    // backends/kernel_registry.cpp, above the backends: callable from layers/ and up only.
    static KernelRegistry& instance();

    template <class K>
    void add(DeviceKind kind, std::string impl, Factory<K> factory) {
        entries_[std::type_index(typeid(K))].push_back(
            {kind, std::move(impl), std::make_shared<Factory<K>>(std::move(factory))});
    }

    // Builds a K for `device`: the implementation named `impl`, or the device kind's default
    // when `impl` is empty. Throws BackendError listing the registered ones when none fits.
    // A config with a `precision` (Conv2d, Linear) that the device cannot compute in is a
    // ConfigError naming the device and why, before any implementation is asked.
    template <class K>
    std::unique_ptr<K> make(Device& device, const typename K::Config& config,
                            std::string_view impl = {}) const {
        if constexpr (requires { config.precision; }) require_precision(device, config.precision);
        auto it = entries_.find(std::type_index(typeid(K)));
        if (it != entries_.end())
            for (const auto& e : it->second)
                if (e.kind == device.kind() && (impl.empty() || e.impl == impl))
                    return (*static_cast<const Factory<K>*>(e.factory.get()))(device, config);
        throw_missing(K::kName, device, impl, implementations<K>());
    }

    // Whether `device`'s kind has an implementation of K (the one named `impl`, or any when
    // empty): how a layer asks for an optional kernel kind (RnnSequenceKernel, BatchNormReluKernel)
    // before `make`.
    template <class K>
    bool offers(const Device& device, std::string_view impl = {}) const {
        auto it = entries_.find(std::type_index(typeid(K)));
        if (it != entries_.end())
            for (const auto& e : it->second)
                if (e.kind == device.kind() && (impl.empty() || e.impl == impl)) return true;
        return false;
    }

    // "cpu/dnnl, cpu/reference" for kernel kind K.
    template <class K>
    std::vector<std::string> implementations() const {
        return list(std::type_index(typeid(K)));
    }

    // Every implementation name registered for any kernel kind and device kind, sorted:
    // what a layer's kernel_impl may name in this build.
    std::vector<std::string> implementation_names() const;

private:
    struct Entry {
        DeviceKind kind;
        std::string impl;
        std::shared_ptr<void> factory;
    };
    KernelRegistry();
    std::vector<std::string> list(std::type_index type) const;
    static void require_precision(const Device& device, Precision precision);
    [[noreturn]] static void throw_missing(std::string_view kernel, const Device& device,
                                           std::string_view impl,
                                           const std::vector<std::string>& registered);

    std::unordered_map<std::type_index, std::vector<Entry>> entries_;
};

// Defined by each backend; the registry's constructor (backends/kernel_registry.cpp) calls
// those compiled in.
void register_cpu_kernels(KernelRegistry& registry);
#if TANDEM_CUDA
void register_cuda_kernels(KernelRegistry& registry);  // device/cuda/register.cpp
#endif

}  // namespace tandem

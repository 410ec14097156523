// KernelCache: a layer's kernels, one per (device, config), built on first use.
//
// A layer sees few distinct input shapes (the training batch, the last partial batch, the
// evaluation batch), so a short list searched linearly beats a map here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/registry.h"

namespace tandem {

template <class K>
class KernelCache {
public:
    K& get(Device& device, const typename K::Config& config, const std::string& impl = {}) {
        for (auto& e : entries_)
            if (e.device == &device && e.config == config && e.impl == impl) return *e.kernel;
        entries_.push_back(
            {&device, config, impl, KernelRegistry::instance().make<K>(device, config, impl)});
        return *entries_.back().kernel;
    }
    void clear() { entries_.clear(); }

private:
    struct Entry {
        Device* device;
        typename K::Config config;
        std::string impl;
        std::unique_ptr<K> kernel;
    };
    std::vector<Entry> entries_;
};

// The device's element-wise operations (one shared kernel per device). This and in_layout are
// defined in backends/tensor_ops.cpp (they need the registry's instance): layers/ and up only.
TensorOpsKernel& tensor_ops(Device& device);
// `t` in `layout` on `device`: `t` itself when it already is, else a copy (branches of a block
// or graph may change the layout, e.g. by flattening).
Tensor in_layout(const Tensor& t, Layout layout, Device& device);

}  // namespace tandem

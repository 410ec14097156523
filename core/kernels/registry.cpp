#include "kernels/registry.h"

#include <algorithm>

#include "base/format.h"

namespace tandem {

std::vector<std::string> KernelRegistry::list(std::type_index type) const {
    std::vector<std::string> names;
    if (auto it = entries_.find(type); it != entries_.end())
        for (const auto& e : it->second)
            names.push_back(std::string(device_kind_name(e.kind)) + "/" + e.impl);
    return names;
}

std::vector<std::string> KernelRegistry::implementation_names() const {
    std::vector<std::string> names;
    for (const auto& [type, entries] : entries_)
        for (const auto& e : entries)
            if (std::find(names.begin(), names.end(), e.impl) == names.end())
                names.push_back(e.impl);
    std::sort(names.begin(), names.end());
    return names;
}

void KernelRegistry::require_precision(const Device& device, Precision precision) {
    if (precision == Precision::fp32) return;
    const std::string why = device.precision_unavailable(precision);
    TANDEM_CHECK_AS(ConfigError, why.empty())
        << device.name() << " cannot compute in " << precision_name(precision) << ": " << why;
}

void KernelRegistry::throw_missing(std::string_view kernel, const Device& device,
                                   std::string_view impl,
                                   const std::vector<std::string>& registered) {
    std::string text = "no ";
    text += kernel;
    text += " kernel";
    if (!impl.empty()) text += " '" + std::string(impl) + "'";
    text += " for " + device.name() + " (registered: ";
    text += registered.empty() ? "none" : join(registered, ", ");
    text += ")";
#if !TANDEM_CUDA
    if (device.kind() == DeviceKind::cuda) text += "; this build has TANDEM_CUDA=OFF";
#endif
    throw BackendError(text);
}

}  // namespace tandem

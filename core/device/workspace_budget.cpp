#include "device/workspace_budget.h"

#include <algorithm>

namespace tandem {

std::size_t default_workspace_budget(std::size_t memory_cap) {
    constexpr std::size_t kMiB = std::size_t(1) << 20;
    return std::clamp(memory_cap / 16, 64 * kMiB, 8192 * kMiB);
}

}  // namespace tandem

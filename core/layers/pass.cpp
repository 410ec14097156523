#include "layers/pass.h"

namespace tandem {

const std::vector<Tensor>& Tape::get(const void* owner, std::size_t slot) const {
    auto it = saved_.find(Key{owner, slot});
    TANDEM_CHECK(it != saved_.end())
        << "backward without a forward in training mode for this micro-batch";
    return it->second;
}

std::size_t Tape::bytes() const {
    std::size_t total = 0;
    for (const auto& [layer, tensors] : saved_)
        for (const auto& t : tensors)
            if (t.defined()) total += t.nbytes();
    return total;
}

}  // namespace tandem

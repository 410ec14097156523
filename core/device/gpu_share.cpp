#include "device/gpu_share.h"

#include <algorithm>
#include <map>
#include <set>

#include "base/error.h"
#include "base/format.h"

namespace tandem {
namespace {

std::vector<int> first_ordinals(int count) {
    std::vector<int> ordinals(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) ordinals[std::size_t(i)] = i;
    return ordinals;
}

// Ranks that see exactly the same GPUs: the r-th run of the bus ids in sorted order.
std::vector<int> shared_run(const std::vector<std::string>& mine, int ranks, int local_rank,
                            int wanted) {
    const int count = static_cast<int>(mine.size());
    TANDEM_CHECK_AS(ConfigError, count >= ranks)
        << "no CUDA device: " << ranks << " MPI ranks on this node see the same " << count
        << (count == 1 ? " GPU" : " GPUs") << " (" << join(mine, ", ") << "); start at most "
        << count
        << " ranks per node, or give each rank its own GPUs "
           "(CUDA_VISIBLE_DEVICES)";
    const int each = wanted < 0 ? count / ranks : wanted;
    TANDEM_CHECK_AS(ConfigError, each * ranks <= count)
        << "no CUDA device: " << ranks << " MPI ranks on this node share its " << count
        << " GPUs, so " << wanted << " each would need " << each * ranks << "; ask for at most "
        << count / ranks << " per rank, or 'all'";
    std::vector<std::string> sorted = mine;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> ordinals;
    for (int i = local_rank * each; i < (local_rank + 1) * each; ++i) {
        const auto at = std::find(mine.begin(), mine.end(), sorted[std::size_t(i)]);
        ordinals.push_back(static_cast<int>(at - mine.begin()));
    }
    std::sort(ordinals.begin(), ordinals.end());
    return ordinals;
}

}  // namespace

std::vector<int> node_gpu_share(const std::vector<std::vector<std::string>>& seen, int local_rank,
                                int wanted) {
    const int ranks = static_cast<int>(seen.size());
    TANDEM_CHECK_AS(ConfigError, local_rank >= 0 && local_rank < ranks)
        << "local rank " << local_rank << " is not one of the node's " << ranks;
    const std::vector<std::string>& mine = seen[std::size_t(local_rank)];
    const int count = static_cast<int>(mine.size());
    const std::set<std::string> my_set(mine.begin(), mine.end());
    bool all_same = true;
    std::map<std::string, int> first_seer;  // bus id -> lowest local rank that sees it
    for (int r = 0; r < ranks; ++r) {
        const auto& theirs = seen[std::size_t(r)];
        all_same = all_same && std::set<std::string>(theirs.begin(), theirs.end()) == my_set;
        for (const auto& id : theirs) first_seer.emplace(id, r);
    }
    if (ranks > 1 && all_same) return shared_run(mine, ranks, local_rank, wanted);
    for (int r = 0; r < ranks; ++r)
        for (const auto& id : seen[std::size_t(r)]) {
            const int other = first_seer.at(id);
            TANDEM_CHECK_AS(ConfigError, other == r)
                << "no CUDA device: MPI ranks " << other << " and " << r << " on this node both "
                << "see GPU " << id << ", but not the same GPUs ("
                << join(seen[std::size_t(other)], ", ") << " against "
                << join(seen[std::size_t(r)], ", ") << "); give every rank all "
                << "of the node's GPUs or each its own";
        }
    if (wanted < 0) return first_ordinals(count);
    TANDEM_CHECK_AS(ConfigError, wanted <= count)
        << "no CUDA device: " << wanted << " asked, " << count << " given to this rank ("
        << join(mine, ", ") << ")";
    return first_ordinals(wanted);
}

}  // namespace tandem

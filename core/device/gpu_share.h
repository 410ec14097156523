// Which GPUs a rank of an MPI job takes when several ranks run on one node.
//
// `mpirun -np 8 --map-by ppr:4:node tandem run RECIPE` starts four ranks on each node, and
// each runs the recipe's `T.devices('cuda', 'all')`. Every rank sees the node's GPUs unless
// the launcher gave it its own (CUDA_VISIBLE_DEVICES, a scheduler's GPU binding), and two
// ranks driving one GPU would collide in NCCL. So the ranks of a node compare the GPUs they
// see, by PCI bus id (the same GPU whatever each process's CUDA numbering), and:
//  - ranks that see the same GPUs share them out: sorted by bus id, local rank r takes the
//    r-th run of `wanted` GPUs ('all': the node's count divided by its ranks, any remainder
//    left idle);
//  - ranks that see disjoint GPUs each take from their own, as one process would;
//  - anything else (some GPU seen by two ranks whose lists differ) is a ConfigError naming the
//    GPU and the ranks, since no rule would keep them apart.
#pragma once

#include <string>
#include <vector>

namespace tandem {

// `seen[r]`: the bus ids local rank r sees, in its CUDA order (none for a rank without
// GPUs: such a rank stops with its own "no CUDA device" error before asking). Returns the
// CUDA ordinals local rank `local_rank` takes, ascending; `wanted` < 0 means all it may have.
// ConfigError when there are too few GPUs for the ranks or for `wanted`.
std::vector<int> node_gpu_share(const std::vector<std::vector<std::string>>& seen, int local_rank,
                                int wanted);

}  // namespace tandem

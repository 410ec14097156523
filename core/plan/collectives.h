// How NCCL lays out an all-reduce over a topology's devices, for the simulator (issue 20).
//
// Ring: NCCL orders a ring by the topology (Topology::ring_order). On one machine it runs one
// ring; across machines it runs one ring per channel, each entering and leaving every machine
// at another GPU, so the rings' network hops spread over the machines' NICs (NCCL's channels,
// one NIC each). Here: as many rings as the smallest machine has members.
//
// Tree (NCCL 2.4 and later, "Massively Scale Your Deep Learning Training with NCCL 2.4", NVIDIA
// developer blog, 2019): inside a machine a chain; across machines a double binary tree, two
// complementary binary trees (NCCL's ncclGetDtree: the second mirrored for an even count of
// machines, shifted by one for an odd count) so that a machine that is interior in one is a
// leaf in the other. Each tree carries half the data: reduce up to the root, broadcast down,
// pipelined in chunks. Chains: the machine's fast ring with its slowest hop dropped, the second
// tree's chain reversed; a child machine's chain head sends to its parent machine's second GPU
// (NCCL's balanced tree pattern: parent on the first GPU, children on the second). Across
// machines, as many double trees as the smallest machine has members, one a channel, each
// machine's chain rotated by one GPU from the last so that the trees leave and enter the
// machines through every GPU's NIC, each carrying an equal share (NCCL's tree channels).
//
// The tree's time is its pipeline's, in closed form: the busiest channel's bytes over its
// bandwidth (every tree edge carries its tree's half once up and once down), plus the time for
// one chunk to climb the deepest path to the root and come back down (hop latencies and chunk
// copies): bytes / bandwidth + depth x latency, not log2(n) x the whole message.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "plan/nccl_tuning.h"
#include "plan/topology.h"

namespace tandem {

// NCCL's tree chunk with its SIMPLE protocol: a 4 MiB buffer (NCCL_BUFFSIZE) in 8 steps
// (NCCL_STEPS), one step a chunk.
constexpr std::size_t kTreeChunkBytes = std::size_t(512) << 10;

// NCCL's binary tree over n ranks with root 0 (ncclGetBtree): the parent of `rank`, -1 for the
// root.
int binary_tree_parent(int n, int rank);
// The two trees of NCCL's double binary tree over n ranks: each rank's parent, -1 for a root.
std::array<std::vector<int>, 2> double_binary_tree(int n);

// The chain a machine's devices (topology indices) form in NCCL's tree: the fast ring with
// its slowest hop dropped.
std::vector<int> machine_chain(const Topology& topology, const std::vector<int>& devices);

// The rings of an all-reduce over `devices` (topology indices), each a list of them in order;
// each carries an equal share of the bytes.
std::vector<std::vector<int>> all_reduce_rings(const Topology& topology,
                                               const std::vector<int>& devices);

struct TreeAllReduce {
    // Per tree of the first channel: for each position in `devices`, its parent's position, -1
    // for the root.
    std::array<std::vector<int>, 2> parent;
    std::vector<int> channels;       // every channel the trees use
    std::vector<double> channel_ms;  // each one's bytes over its bandwidth
    double bandwidth_ms = 0;         // the busiest channel's bytes over its bandwidth
    double fill_ms = 0;              // one chunk up the deepest path and back down
    double ms() const { return bandwidth_ms + fill_ms; }
};

// NCCL's tree all-reduce of `bytes` over `devices` (topology indices, at least two), with
// `protocol`'s share of each link and its hop latency (nccl_tuning.h).
TreeAllReduce tree_all_reduce(const Topology& topology, const std::vector<int>& devices,
                              std::size_t bytes, NcclProtocol protocol = NcclProtocol::simple);

// NVLS (NVLink SHARP, NCCL 2.17 and later on H100 NVSwitch machines): every GPU's share of
// the sum is reduced in the switch as the switch reads it from all GPUs (multimem.ld_reduce),
// then written back to all of them at once (multimem.st). Each GPU's port carries, each way,
// its whole buffer once and its own 1/n share once: S (1 + 1/n) at NCCL's efficiency of the
// switch's reduction (nccl_nvls_efficiency), plus NCCL's NVLS latency. Bus bandwidth 2(n-1) /
// (n+1) of a port's, where the ring reaches one port's.
struct NvlsAllReduce {
    std::vector<int> channels;  // every member's ports into and out of the fabric
    double ms = 0;
};
// Whether `devices` can run it: all on one fabric that reduces, Hopper or later.
bool nvls_available(const Topology& topology, const std::vector<int>& devices);
NvlsAllReduce nvls_all_reduce(const Topology& topology, const std::vector<int>& devices,
                              std::size_t bytes);

// NCCL's hardware class of a copy's route: the network if it crosses one, NVLink if every
// channel is NVLink, PCI otherwise.
NcclHardware route_hardware(const Topology& topology, int from, int to);
// What NCCL's tuning model reads of an all-reduce over `devices`: its rings' bus bandwidth
// inside the machines (the slowest hop) and between them (each ring's slowest network hop,
// summed over the rings), the GPUs' generation, NVLink, NVLS.
NcclComm nccl_comm(const Topology& topology, const std::vector<int>& devices);
// NCCL's choice of algorithm and protocol for an all-reduce of `bytes` over `devices`.
NcclChoice choose_all_reduce(const Topology& topology, const std::vector<int>& devices,
                             std::size_t bytes);

}  // namespace tandem

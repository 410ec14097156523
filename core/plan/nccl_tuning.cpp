#include "plan/nccl_tuning.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "base/enum_names.h"

namespace tandem {
namespace {

constexpr int kNcclAlgorithms = 3;  // tree, ring, nvls: NcclAlgorithm's order
constexpr int kNcclProtocols = 3;   // LL, LL128, Simple: NcclProtocol's order
using NcclPerAlgorithm = std::array<std::array<double, kNcclProtocols>, kNcclAlgorithms>;
// Rows per GPU generation (Volta, Ampere, Hopper); columns per node count (1, 2, more).
using NcclPerGeneration = std::array<std::array<double, 3>, 3>;

// NCCL 2.30.7's tuning constants (src/graph/tuning.cc, ncclTunerConstantsDefaults,
// nvlsEfficiency, treeCorrectionFactor, and the refinements inside ncclTopoTuneModel), for
// all-reduce, Tree, Ring and NVLS only, Intel hosts. Latencies in us, bandwidths in GB/s.
struct NcclConstants {
    NcclPerAlgorithm base_latency;
    std::array<NcclPerAlgorithm, 3> hop_latency;  // NVLink, PCI, network
    NcclPerGeneration ll_max_gbs;                 // llMaxBws: the LL protocol's ceiling
    NcclPerGeneration ring_ll128_gbs_per_channel;
    NcclPerGeneration tree_ll128_gbs_per_channel;
    NcclPerGeneration tree_gbs_per_channel;
    std::array<double, 3> nvls_efficiency;  // of the links, per generation
    std::array<std::array<double, 23>, kNcclProtocols> tree_correction;  // by log2(bytes / 64)
    double ring_ll128_share = 0.92;  // "120.0/128.0" in NCCL's comment
    double tree_share = 0.92;
    double tree_ll_share = 1 / 3.8;
    double tree_ll128_share_one_node = 7.0 / 9.0;
    double tree_ll128_share_nodes = 120.0 / 128.0;
    double net_overhead_us = 1.0;  // an Intel host's network post, x3 with Simple
    double ring_plateau_pre_ampere = 1.9, ring_plateau = 1.4;  // Simple across machines
};

const NcclConstants& nccl_constants() {
    static const NcclConstants c{
        // baseLatencies: Tree, Ring, NVLS (LL, LL128, Simple)
        {{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}}},
        // hwLatencies
        {{
            {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}}},  // NVLink
            {{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}}},    // PCI
            {{{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}}},   // network
        }},
        // llMaxBws (one node: by GPU; more: Intel's row, as NCCL reads the CPU then)
        {{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}}},
        {{{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}}},  // perChMaxRingLL128Bws
        {{{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}}},  // perChMaxTreeLL128Bws
        {{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}}},  // perChMaxTreeBws
        {0.0, 0.0, 0.85},                                                // nvlsEfficiency
        {{
            {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
             .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
            {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
             .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
            {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
             .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
        }},
    };
    return c;
}

std::size_t nccl_index(NcclAlgorithm a) {
    return static_cast<std::size_t>(a);
}
std::size_t nccl_index(NcclProtocol p) {
    return static_cast<std::size_t>(p);
}

std::size_t nccl_generation(int compute_capability) {
    return compute_capability >= 90 ? 2 : compute_capability >= 80 ? 1 : 0;
}
std::size_t nccl_node_column(int nodes) {
    return static_cast<std::size_t>(std::min(nodes, 3) - 1);
}

int nccl_log2(std::size_t n) {
    int l = 0;
    while (n >>= 1) ++l;
    return l;
}

NcclHardware nccl_intra_hardware(const NcclComm& comm) {
    return comm.nvlink ? NcclHardware::nvlink : NcclHardware::pci;
}

double nccl_hop_latency(NcclHardware hw, NcclAlgorithm a, NcclProtocol p) {
    return nccl_constants().hop_latency[static_cast<std::size_t>(hw)][nccl_index(a)][nccl_index(p)];
}

// NCCL enables LL128 by default on NVLink-class paths of Volta and later.
bool nccl_ll128_enabled(const NcclComm& comm) {
    return comm.nvlink && comm.compute_capability >= 70;
}

}  // namespace

namespace {

constexpr std::array<EnumName<NcclAlgorithm>, 3> kNcclAlgorithmNames{{
    {NcclAlgorithm::tree, "tree"},
    {NcclAlgorithm::ring, "ring"},
    {NcclAlgorithm::nvls, "nvls"},
}};
constexpr std::array<EnumName<NcclProtocol>, 3> kNcclProtocolNames{{
    {NcclProtocol::ll, "LL"},
    {NcclProtocol::ll128, "LL128"},
    {NcclProtocol::simple, "Simple"},
}};

}  // namespace

std::string_view nccl_algorithm_name(NcclAlgorithm algorithm) {
    return enum_name(kNcclAlgorithmNames, algorithm);
}

std::string_view nccl_protocol_name(NcclProtocol protocol) {
    return enum_name(kNcclProtocolNames, protocol);
}

std::string NcclChoice::name() const {
    return std::string(nccl_algorithm_name(algorithm)) + "/" +
           std::string(nccl_protocol_name(protocol));
}

int nccl_channels(const NcclComm& comm) {
    return std::max(2, static_cast<int>(std::ceil(comm.intra_gbs / kNcclChannelGbs - 1e-9)));
}

double nccl_bandwidth_gbs(const NcclComm& comm, NcclAlgorithm a, NcclProtocol p) {
    const NcclConstants& k = nccl_constants();
    if (comm.ranks < 2) return 0;
    if (p == NcclProtocol::ll128 && !nccl_ll128_enabled(comm)) return 0;
    const std::size_t gen = nccl_generation(comm.compute_capability),
                      col = nccl_node_column(comm.nodes);
    const std::size_t ll_row = comm.nodes == 1 ? gen : 0;
    const double channels = nccl_channels(comm);
    // NCCL reads the intra-node speed up to two nodes and the inter-node one beyond; a ring's
    // channels across machines run at their slowest hop, which here is the smaller of the two.
    double bus = comm.nodes == 1 ? comm.intra_gbs : std::min(comm.intra_gbs, comm.inter_gbs);
    const double steps = 2.0 * (comm.ranks - 1);
    switch (a) {
        case NcclAlgorithm::nvls:
            // One machine's switch only (across machines NCCL needs CollNet or NVLS Tree), the
            // Simple protocol only; the reduction and the broadcast run at once.
            if (!comm.nvls || comm.nodes > 1 || p != NcclProtocol::simple) return 0;
            bus = comm.intra_gbs * k.nvls_efficiency[gen] * (channels - 1) / channels * 2;
            return bus * comm.ranks / steps;
        case NcclAlgorithm::ring:
            if (p == NcclProtocol::ll)
                bus = std::min(k.ll_max_gbs[ll_row][col], bus * nccl_protocol_payload(p));
            if (p == NcclProtocol::ll128)
                bus = std::min(bus * k.ring_ll128_share,
                               channels * k.ring_ll128_gbs_per_channel[gen][col]);
            return bus * comm.ranks / steps;
        case NcclAlgorithm::tree:
            bus = std::min(bus * k.tree_share, channels * k.tree_gbs_per_channel[gen][col]);
            if (p == NcclProtocol::ll)
                bus = std::min(bus * k.tree_ll_share, k.ll_max_gbs[ll_row][col]);
            if (p == NcclProtocol::ll128)
                bus = std::min(bus * (comm.nodes == 1 ? k.tree_ll128_share_one_node
                                                      : k.tree_ll128_share_nodes),
                               channels * k.tree_ll128_gbs_per_channel[gen][col]);
            return bus * 0.5;
    }
    return 0;
}

double nccl_latency_us(const NcclComm& comm, NcclAlgorithm a, NcclProtocol p) {
    const NcclConstants& k = nccl_constants();
    const NcclHardware intra = nccl_intra_hardware(comm);
    double intra_us = nccl_hop_latency(intra, a, p);
    const bool one_per_node = comm.ranks == comm.nodes;
    const double inter_us =
        nccl_hop_latency(NcclHardware::net, one_per_node ? NcclAlgorithm::tree : a, p);
    switch (a) {
        case NcclAlgorithm::nvls: return intra_us + (comm.nodes > 1 ? inter_us : 0);
        case NcclAlgorithm::ring: {
            if (comm.nodes > 1)
                intra_us =
                    std::max(intra_us, k.net_overhead_us * (p == NcclProtocol::simple ? 3 : 1));
            const int steps = 2 * (comm.ranks - 1);
            const int inter_steps = comm.nodes == 1 ? 0 : 2 * (comm.nodes - 1);
            return k.base_latency[nccl_index(a)][nccl_index(p)] + (steps - inter_steps) * intra_us +
                   inter_steps * inter_us;
        }
        case NcclAlgorithm::tree:
            return k.base_latency[nccl_index(a)][nccl_index(p)] +
                   2 * ((comm.ranks / comm.nodes - 1) * intra_us +
                        nccl_log2(static_cast<std::size_t>(comm.nodes)) * inter_us);
    }
    return 0;
}

double nccl_time_us(const NcclComm& comm, NcclAlgorithm a, NcclProtocol p, std::size_t bytes) {
    const NcclConstants& k = nccl_constants();
    double bw = nccl_bandwidth_gbs(comm, a, p);
    if (bw <= 0) return -1;
    double latency = nccl_latency_us(comm, a, p);
    const int log_size = nccl_log2(bytes >> 6);
    if (a == NcclAlgorithm::tree && log_size < 23)
        bw *= k.tree_correction[nccl_index(p)][static_cast<std::size_t>(log_size)];
    if (a == NcclAlgorithm::ring && p == NcclProtocol::simple && comm.nodes > 1 &&
        static_cast<double>(bytes) / (nccl_channels(comm) * comm.ranks) >= 64)
        latency *= comm.compute_capability < 80 ? k.ring_plateau_pre_ampere : k.ring_plateau;
    return latency + static_cast<double>(bytes) / (1000 * bw);
}

NcclChoice nccl_choose(const NcclComm& comm, std::size_t bytes) {
    NcclChoice best;
    best.us = -1;
    for (NcclAlgorithm a : {NcclAlgorithm::tree, NcclAlgorithm::ring, NcclAlgorithm::nvls})
        for (NcclProtocol p : {NcclProtocol::ll, NcclProtocol::ll128, NcclProtocol::simple}) {
            const double us = nccl_time_us(comm, a, p, bytes);
            if (us >= 0 && (best.us < 0 || us < best.us)) best = {a, p, us};
        }
    return best;
}

double nccl_protocol_payload(NcclProtocol protocol) {
    switch (protocol) {
        case NcclProtocol::ll: return 8.0 / 16.0;
        case NcclProtocol::ll128: return 120.0 / 128.0;
        case NcclProtocol::simple: return 1.0;
    }
    return 1.0;
}

double nccl_hop_latency_ratio(NcclHardware hardware, NcclAlgorithm algorithm,
                              NcclProtocol protocol) {
    const double simple = nccl_hop_latency(hardware, algorithm, NcclProtocol::simple);
    return simple > 0 ? nccl_hop_latency(hardware, algorithm, protocol) / simple : 1.0;
}

double nccl_nvls_efficiency(int compute_capability) {
    return nccl_constants().nvls_efficiency[nccl_generation(compute_capability)];
}

double nccl_nvls_latency_us() {
    return nccl_hop_latency(NcclHardware::nvlink, NcclAlgorithm::nvls, NcclProtocol::simple);
}

}  // namespace tandem

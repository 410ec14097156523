// NCCL's own choice of all-reduce algorithm and protocol (issue 20), as its tuning model makes it:
// for each (algorithm, protocol) a latency (a base plus per-hop latencies) and a bandwidth, the
// time of a message latency + bytes / bandwidth, and the fastest taken. Our code after NCCL
// 2.30.7's src/graph/tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime); its constants are in
// one table in nccl_tuning.cpp.
//
// The protocols move data differently: Simple in large steps behind a memory fence (the most
// latency, all of the link), LL ("low latency") in 8-byte flag+data words of 16 bytes (half the
// link, no fence), LL128 in 128-byte lines of 120 bytes of data (NVLink-class paths only in
// NCCL's default). The simulator plays the chosen one (simulator_collectives.cpp): its bytes
// over the protocol's share of the link and its hops at the protocol's latency.
//
// Left out of NCCL's model: CollNet, PAT and NVLS Tree (multi-node NVLS, which needs CollNet or
// NVLS Tree), the CPU vendor (Intel's constants throughout), the tree's pattern penalty, the
// graph search's own per-channel speeds (a channel here carries kNcclChannelGbs) and the
// user's NCCL_ALGO / NCCL_PROTO.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tandem {

enum class NcclAlgorithm { tree, ring, nvls };
enum class NcclProtocol { ll, ll128, simple };
// NCCL's hardware classes of a hop (NCCL_HW_NVLINK, _PCI, _NET).
enum class NcclHardware { nvlink, pci, net };

std::string_view nccl_algorithm_name(NcclAlgorithm algorithm);  // "ring"
std::string_view nccl_protocol_name(NcclProtocol protocol);     // "LL128"

// What the tuning model reads of a communicator.
struct NcclComm {
    int ranks = 2;
    int nodes = 1;
    int compute_capability = 70;  // the slowest GPU's, x 10
    double intra_gbs = 0;         // bus bandwidth inside a machine (all channels, one direction)
    double inter_gbs = 0;         // between machines (all channels); 0 on one machine
    bool nvlink = false;          // every hop inside a machine is NVLink (NCCL's typeIntra NVL)
    bool nvls = false;            // all ranks on one fabric whose switches reduce
};

// The channels NCCL would run: one per kNcclChannelGbs of bus bandwidth, at least two (our
// assumption in place of NCCL's graph search, which finds 16-32 channels on NVSwitch machines
// and 2-4 on PCIe ones).
constexpr double kNcclChannelGbs = 24.0;
int nccl_channels(const NcclComm& comm);

// The model's latency (us) and algorithm bandwidth (GB/s; 0: not available) of an all-reduce.
double nccl_latency_us(const NcclComm& comm, NcclAlgorithm algorithm, NcclProtocol protocol);
double nccl_bandwidth_gbs(const NcclComm& comm, NcclAlgorithm algorithm, NcclProtocol protocol);
// Its time for `bytes` (us), with NCCL's corrections (the tree's medium sizes, the ring's
// plateau across machines); negative when the pair is not available.
double nccl_time_us(const NcclComm& comm, NcclAlgorithm algorithm, NcclProtocol protocol,
                    std::size_t bytes);

struct NcclChoice {
    NcclAlgorithm algorithm = NcclAlgorithm::ring;
    NcclProtocol protocol = NcclProtocol::simple;
    double us = 0;             // the model's time
    std::string name() const;  // "ring/LL"
};
// The fastest available pair for `bytes`.
NcclChoice nccl_choose(const NcclComm& comm, std::size_t bytes);

// What the simulator plays a protocol with: the share of a link's bandwidth that carries data
// (LL 8 of 16 bytes, LL128 120 of 128, Simple all) and a hop's latency against Simple's on the
// same hardware (NCCL's per-hop latencies' ratio; a link's own latency is Simple's).
double nccl_protocol_payload(NcclProtocol protocol);
double nccl_hop_latency_ratio(NcclHardware hardware, NcclAlgorithm algorithm,
                              NcclProtocol protocol);
// NVLS: what the switch's reduction attains of the links (NCCL's nvlsEfficiency), and its
// latency (us).
double nccl_nvls_efficiency(int compute_capability);
double nccl_nvls_latency_us();

}  // namespace tandem

#include "plan/collectives.h"

#include <algorithm>
#include <functional>

#include "base/error.h"

namespace tandem {
namespace {

// The devices' positions grouped by machine, machines in order of their first device.
std::vector<std::vector<int>> positions_by_machine(const Topology& topology,
                                                   const std::vector<int>& devices) {
    std::vector<int> machine_ids;
    std::vector<std::vector<int>> groups;
    for (std::size_t i = 0; i < devices.size(); ++i) {
        const int m = topology.machine(devices[i]);
        const auto it = std::find(machine_ids.begin(), machine_ids.end(), m);
        if (it == machine_ids.end()) {
            machine_ids.push_back(m);
            groups.push_back({static_cast<int>(i)});
        } else {
            groups[static_cast<std::size_t>(it - machine_ids.begin())].push_back(
                static_cast<int>(i));
        }
    }
    return groups;
}

std::vector<int> pick(const std::vector<int>& devices, const std::vector<int>& positions) {
    std::vector<int> out;
    for (int p : positions) out.push_back(devices[static_cast<std::size_t>(p)]);
    return out;
}

}  // namespace

int binary_tree_parent(int n, int rank) {
    TANDEM_CHECK(rank >= 0 && rank < n) << "rank " << rank << " of a tree of " << n;
    if (rank == 0) return -1;
    // The lowest set bit says the rank's level: its parent sets the next bit up and clears
    // this one (1 -> 2, 3 -> 2, 5 -> 6), or only clears it when that is out of range.
    const int bit = rank & -rank;
    const int up = (rank ^ bit) | (bit << 1);
    return up < n ? up : rank ^ bit;
}

std::array<std::vector<int>, 2> double_binary_tree(int n) {
    std::array<std::vector<int>, 2> trees;
    for (int r = 0; r < n; ++r) {
        trees[0].push_back(binary_tree_parent(n, r));
        if (n % 2 == 0) {
            // Mirrored: rank r takes the place of n - 1 - r, so the first tree's leaves (odd
            // ranks) are the second's interior.
            const int p = binary_tree_parent(n, n - 1 - r);
            trees[1].push_back(p < 0 ? -1 : n - 1 - p);
        } else {
            // Shifted by one rank, for an odd count where mirroring would keep leaves leaves.
            const int p = binary_tree_parent(n, (r - 1 + n) % n);
            trees[1].push_back(p < 0 ? -1 : (p + 1) % n);
        }
    }
    return trees;
}

namespace {

// The two trees over `n` positions: each machine's chain (the second tree's reversed), each
// chain's head the child of its parent machine's second GPU (`between`: the machines' double
// binary tree).
std::array<std::vector<int>, 2> double_tree_parents(const std::vector<std::vector<int>>& chains,
                                                    const std::array<std::vector<int>, 2>& between,
                                                    std::size_t n) {
    std::array<std::vector<int>, 2> parents;
    for (std::size_t t = 0; t < 2; ++t) {
        auto oriented = chains;
        if (t == 1)
            for (auto& c : oriented) std::reverse(c.begin(), c.end());
        auto& parent = parents[t];
        parent.assign(n, -1);
        for (std::size_t m = 0; m < oriented.size(); ++m) {
            const auto& chain = oriented[m];
            for (std::size_t i = 1; i < chain.size(); ++i)
                parent[static_cast<std::size_t>(chain[i])] = chain[i - 1];
            const int up = between[t][m];
            if (up < 0) continue;
            const auto& above = oriented[static_cast<std::size_t>(up)];
            parent[static_cast<std::size_t>(chain.front())] =
                above[std::min<std::size_t>(1, above.size() - 1)];
        }
    }
    return parents;
}

}  // namespace

std::vector<int> machine_chain(const Topology& topology, const std::vector<int>& devices) {
    if (devices.size() < 3) return devices;
    const std::vector<int> ring = topology.ring_order(devices);
    const std::size_t n = ring.size();
    // Drop the slowest hop (the closing one among equals): the chain starts after it.
    constexpr std::size_t probe = std::size_t(1) << 20;
    std::size_t cut = n - 1;
    double slowest = topology.copy_ms(ring[n - 1], ring[0], probe);
    for (std::size_t i = 0; i + 1 < n; ++i) {
        const double ms = topology.copy_ms(ring[i], ring[i + 1], probe);
        if (ms > slowest) slowest = ms, cut = i;
    }
    std::vector<int> chain;
    for (std::size_t k = 1; k <= n; ++k) chain.push_back(ring[(cut + k) % n]);
    return chain;
}

std::vector<std::vector<int>> all_reduce_rings(const Topology& topology,
                                               const std::vector<int>& devices) {
    const auto machines = positions_by_machine(topology, devices);
    if (machines.size() < 2) return {topology.ring_order(devices)};
    std::vector<std::vector<int>> cycles;
    std::size_t rings = devices.size();
    for (const auto& m : machines) {
        cycles.push_back(topology.ring_order(pick(devices, m)));
        rings = std::min(rings, m.size());
    }
    std::vector<std::vector<int>> out(rings);
    for (std::size_t r = 0; r < rings; ++r)
        for (const auto& cycle : cycles)
            for (std::size_t j = 0; j < cycle.size(); ++j)
                out[r].push_back(cycle[(r + j) % cycle.size()]);
    return out;
}

TreeAllReduce tree_all_reduce(const Topology& topology, const std::vector<int>& devices,
                              std::size_t bytes, NcclProtocol protocol) {
    TreeAllReduce tree;
    const std::size_t n = devices.size();
    if (n < 2) return tree;
    const auto machines = positions_by_machine(topology, devices);
    // Each machine's chain as positions in `devices`.
    std::vector<std::vector<int>> chains;
    for (const auto& m : machines) {
        const std::vector<int> chain = machine_chain(topology, pick(devices, m));
        std::vector<int> positions;
        for (int d : chain)
            positions.push_back(
                static_cast<int>(std::find(devices.begin(), devices.end(), d) - devices.begin()));
        chains.push_back(std::move(positions));
    }
    const auto between = double_binary_tree(static_cast<int>(machines.size()));
    tree.parent = double_tree_parents(chains, between, n);

    // Bytes through each channel: every edge carries its tree's half up and down. Across
    // machines NCCL runs a double tree per channel, each entering every machine at another GPU
    // so that the trees' network hops spread over the NICs, as the rings' do: here as many as
    // the smallest machine has members, each machine's chain rotated by one GPU from the last,
    // each carrying an equal share (the first is `tree.parent`).
    std::size_t trees = 1;
    if (machines.size() > 1) {
        trees = n;
        for (const auto& m : machines) trees = std::min(trees, m.size());
    }
    const auto& channels = topology.channels();
    std::vector<double> load(channels.size(), 0.0);
    const double payload = nccl_protocol_payload(protocol);
    const double half = static_cast<double>(bytes) / 2 / payload / static_cast<double>(trees);
    auto at = [&](int position) { return devices[static_cast<std::size_t>(position)]; };
    for (std::size_t k = 0; k < trees; ++k) {
        auto rotated = chains;
        for (auto& c : rotated)
            std::rotate(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k % c.size()), c.end());
        for (const auto& parent : k == 0 ? tree.parent : double_tree_parents(rotated, between, n))
            for (std::size_t v = 0; v < n; ++v) {
                const int p = parent[v];
                if (p < 0) continue;
                for (int c : topology.route(at(static_cast<int>(v)), at(p)))
                    load[static_cast<std::size_t>(c)] += half;
                for (int c : topology.route(at(p), at(static_cast<int>(v))))
                    load[static_cast<std::size_t>(c)] += half;
            }
    }
    for (std::size_t c = 0; c < channels.size(); ++c) {
        if (load[c] == 0) continue;
        tree.channels.push_back(static_cast<int>(c));
        tree.bandwidth_ms =
            std::max(tree.bandwidth_ms, load[c] / (channels[c].bandwidth_gbs * 1e6));
    }

    // The pipeline's fill: one chunk from the deepest leaf to the root, and back down.
    const std::size_t chunk =
        std::max<std::size_t>(1, std::min<std::size_t>(kTreeChunkBytes, bytes / 2));
    for (const auto& parent : tree.parent) {
        std::vector<std::vector<int>> children(n);
        int root = -1;
        for (std::size_t v = 0; v < n; ++v) {
            if (parent[v] < 0)
                root = static_cast<int>(v);
            else
                children[static_cast<std::size_t>(parent[v])].push_back(static_cast<int>(v));
        }
        // A hop: the route's latency at the protocol's share of Simple's, the chunk's wire bytes.
        auto hop_ms = [&](int from, int to) {
            const double latency_ms = topology.copy_ms(from, to, 0);
            const auto wire = static_cast<std::size_t>(static_cast<double>(chunk) / payload);
            return latency_ms * nccl_hop_latency_ratio(route_hardware(topology, from, to),
                                                       NcclAlgorithm::tree, protocol) +
                   topology.copy_ms(from, to, wire) - latency_ms;
        };
        std::function<double(int, bool)> longest = [&](int v, bool up) {
            double ms = 0;
            for (int c : children[static_cast<std::size_t>(v)])
                ms = std::max(ms,
                              longest(c, up) + (up ? hop_ms(at(c), at(v)) : hop_ms(at(v), at(c))));
            return ms;
        };
        tree.fill_ms = std::max(tree.fill_ms, longest(root, true) + longest(root, false));
    }
    return tree;
}

bool nvls_available(const Topology& topology, const std::vector<int>& devices) {
    if (devices.size() < 2) return false;
    const int f = topology.fabric(devices.front());
    if (!topology.fabric_reduces(f)) return false;
    return std::all_of(devices.begin(), devices.end(), [&](int d) {
        const TopologyDevice& device = topology.device(d);
        return topology.fabric(d) == f && !device.cpu &&
               nccl_nvls_efficiency(device_model(device.model).compute_capability) > 0;
    });
}

NvlsAllReduce nvls_all_reduce(const Topology& topology, const std::vector<int>& devices,
                              std::size_t bytes) {
    TANDEM_CHECK_AS(ConfigError, nvls_available(topology, devices))
        << "NVLS needs every device on one NVSwitch fabric that reduces (fabrics = {{..., "
           "reduces = true}}), Hopper or later";
    NvlsAllReduce nvls;
    const double n = static_cast<double>(devices.size());
    const double efficiency = nccl_nvls_efficiency(
        device_model(topology.device(devices.front()).model).compute_capability);
    const double port_bytes = static_cast<double>(bytes) * (1 + 1 / n);
    double slowest = 0;
    for (int d : devices)
        for (int c : {topology.fabric_port_in(d), topology.fabric_port_out(d)}) {
            nvls.channels.push_back(c);
            const Channel& ch = topology.channels()[static_cast<std::size_t>(c)];
            slowest = std::max(slowest, port_bytes / (ch.bandwidth_gbs * efficiency * 1e6));
        }
    nvls.ms = nccl_nvls_latency_us() / 1e3 + slowest;
    return nvls;
}

NcclHardware route_hardware(const Topology& topology, int from, int to) {
    bool nvlink = true;
    for (int c : topology.route(from, to)) {
        const Channel& ch = topology.channels()[static_cast<std::size_t>(c)];
        if (ch.network) return NcclHardware::net;
        nvlink = nvlink && ch.nvlink;
    }
    return nvlink ? NcclHardware::nvlink : NcclHardware::pci;
}

NcclComm nccl_comm(const Topology& topology, const std::vector<int>& devices) {
    NcclComm comm;
    comm.ranks = static_cast<int>(devices.size());
    comm.nodes = static_cast<int>(positions_by_machine(topology, devices).size());
    comm.compute_capability = 1000;
    for (int d : devices) {
        const TopologyDevice& device = topology.device(d);
        comm.compute_capability =
            std::min(comm.compute_capability,
                     device.cpu ? 0 : device_model(device.model).compute_capability);
    }
    auto route_gbs = [&](int from, int to) {
        double gbs = 0;
        for (int c : topology.route(from, to)) {
            const double b = topology.channels()[static_cast<std::size_t>(c)].bandwidth_gbs;
            gbs = gbs == 0 ? b : std::min(gbs, b);
        }
        return gbs;
    };
    const auto rings = all_reduce_rings(topology, devices);
    comm.nvlink = true;
    for (std::size_t r = 0; r < rings.size(); ++r) {
        const auto& ring = rings[r];
        double network = 0;
        for (std::size_t i = 0; i < ring.size(); ++i) {
            const int a = ring[i], b = ring[(i + 1) % ring.size()];
            const double gbs = route_gbs(a, b);
            if (topology.machine(a) != topology.machine(b)) {
                network = network == 0 ? gbs : std::min(network, gbs);
                continue;
            }
            if (r == 0) {
                comm.intra_gbs = comm.intra_gbs == 0 ? gbs : std::min(comm.intra_gbs, gbs);
                comm.nvlink = comm.nvlink && route_hardware(topology, a, b) == NcclHardware::nvlink;
            }
        }
        comm.inter_gbs += network;
    }
    // One GPU a machine: its only hops are the network's.
    if (comm.intra_gbs == 0) comm.intra_gbs = comm.inter_gbs, comm.nvlink = false;
    comm.nvls = comm.nodes == 1 && nvls_available(topology, devices);
    return comm;
}

NcclChoice choose_all_reduce(const Topology& topology, const std::vector<int>& devices,
                             std::size_t bytes) {
    return nccl_choose(nccl_comm(topology, devices), bytes);
}

}  // namespace tandem

// libFuzzer: arbitrary topologies (what recipes/topologies/*.lua files describe) built from the
// bytes: nodes with any parents, links, device models, memories, threads and cores, and peer
// links. Reading one may refuse it with a ConfigError naming the mistake (an unknown parent or
// model, a cycle, a device with children, ...); it may not crash, hang or loop.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "plan/topology.h"

namespace {

// Names a topology file would use, and a few it would not: the fuzzer mixes both.
const std::vector<std::string> kLinks = {"pcie3_x16", "pcie4_x16",     "nvlink2", "qpi",
                                         "ib_hdr",    "shared_memory", "",        "pcie9"};
const std::vector<std::string> kDevices = {"", "", "cpu", "V100", "A100", "H100", "K20c", "TPU"};

std::string pick(FuzzedDataProvider& in, const std::vector<std::string>& list) {
    return in.ConsumeBool() ? in.ConsumeRandomLengthString(12)
                            : list[in.ConsumeIntegralInRange<std::size_t>(0, list.size() - 1)];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tandem;
    FuzzedDataProvider in(data, size);
    TopologySpec spec;
    spec.name = "fuzz";
    const int nodes = in.ConsumeIntegralInRange(0, 24);
    std::vector<std::string> names;
    for (int i = 0; i < nodes; ++i) {
        TopologyNodeSpec n;
        n.name = in.ConsumeBool() ? "n" + std::to_string(i) : in.ConsumeRandomLengthString(6);
        if (!names.empty() && in.ConsumeBool())
            n.parent = names[in.ConsumeIntegralInRange<std::size_t>(0, names.size() - 1)];
        else if (in.ConsumeBool())
            n.parent = in.ConsumeRandomLengthString(6);  // often unknown, sometimes itself
        n.link = pick(in, kLinks);
        n.device = pick(in, kDevices);
        n.memory_bytes = in.ConsumeBool() ? 0 : in.ConsumeIntegral<std::size_t>();
        n.threads = in.ConsumeIntegralInRange(-2, 300);
        n.cores = in.ConsumeIntegralInRange(-2, 300);
        names.push_back(n.name);
        spec.nodes.push_back(std::move(n));
    }
    const int peers = in.ConsumeIntegralInRange(0, 6);
    for (int i = 0; i < peers && !names.empty(); ++i) {
        PeerLinkSpec p;
        p.a = names[in.ConsumeIntegralInRange<std::size_t>(0, names.size() - 1)];
        p.b = in.ConsumeBool() ? names[in.ConsumeIntegralInRange<std::size_t>(0, names.size() - 1)]
                               : in.ConsumeRandomLengthString(6);
        p.link = pick(in, kLinks);
        p.count = in.ConsumeIntegralInRange(-1, 20);
        spec.peers.push_back(std::move(p));
    }
    try {
        const Topology topology(std::move(spec));
        // What the planner then reads must hold together.
        for (const auto& d : topology.devices())
            if (d.cpu && (d.pool < 0 || d.pool >= static_cast<int>(topology.pools().size())))
                __builtin_trap();
    } catch (const ConfigError&) {
    }
    return 0;
}

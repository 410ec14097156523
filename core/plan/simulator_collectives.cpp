// StepSimulator::collective_step: one all-reduce among GPUs, as NCCL runs it (collectives.h),
// with the protocol and algorithm NCCL's model picks (Plan::nccl_auto, nccl_tuning.h), or
// through a parameter server (Plan::parameter_server), its copies on the topology's channels,
// which it shares first come, first served with every other copy of the step.
#include <algorithm>

#include "plan/collectives.h"
#include "plan/simulator_internal.h"

namespace tandem::simulation {

void StepSimulator::collective_step(int ci, int step) {
    Collective& c = collectives_[static_cast<std::size_t>(ci)];
    const int n = static_cast<int>(c.members.size());
    std::vector<int> placed;  // the members' topology devices
    for (int m : c.members) placed.push_back(device_of_[static_cast<std::size_t>(m)]);
    auto member_of = [&](int device) {
        return c.members[static_cast<std::size_t>(std::find(placed.begin(), placed.end(), device) -
                                                  placed.begin())];
    };
    // The algorithm and protocol: the plan's with Simple, or NCCL's choice for this size.
    if (!c.chosen) {
        c.choice.algorithm =
            plan_.algorithm == ReduceAlgorithm::ring ? NcclAlgorithm::ring : NcclAlgorithm::tree;
        if (plan_.nccl_auto && !plan_.parameter_server)
            c.choice = choose_all_reduce(topology_, placed, c.bytes);
        c.chosen = true;
    }
    const NcclProtocol protocol = c.choice.protocol;
    double end = now_;
    int steps = 1;
    if (plan_.parameter_server) {
        // Two steps: every other member's bucket into the server (group 0's member), then the
        // sum back out to each; the copies of a step share the server's channels.
        steps = 2;
        const int server = c.members.front();
        for (int m : c.members)
            if (m != server)
                end = std::max(end, step == 0 ? reserve(m, server, c.bytes, now_)
                                              : reserve(server, m, c.bytes, now_));
    } else if (c.choice.algorithm == NcclAlgorithm::ring) {
        // 2(n-1) steps; in each, every member of every ring sends its next chunk to the next
        // member; the next step starts when all have landed. The chunk's wire bytes are the
        // protocol's (LL: twice the data), its hop latency the protocol's share of Simple's.
        steps = 2 * (n - 1);
        if (c.rings.empty())
            for (const auto& ring : all_reduce_rings(topology_, placed)) {
                c.rings.emplace_back();
                for (int device : ring) c.rings.back().push_back(member_of(device));
            }
        const std::size_t share = c.rings.size() * static_cast<std::size_t>(n);
        const std::size_t chunk = (c.bytes + share - 1) / share;
        const auto wire =
            static_cast<std::size_t>(static_cast<double>(chunk) / nccl_protocol_payload(protocol));
        for (const auto& ring : c.rings)
            for (int r = 0; r < n; ++r) {
                const int from = ring[static_cast<std::size_t>(r)];
                const int to = ring[static_cast<std::size_t>((r + 1) % n)];
                double landed = reserve(from, to, wire, now_);
                if (protocol != NcclProtocol::simple) {
                    const int a = device_of_[static_cast<std::size_t>(from)];
                    const int b = device_of_[static_cast<std::size_t>(to)];
                    landed -= topology_.copy_ms(a, b, 0) *
                              (1 - nccl_hop_latency_ratio(route_hardware(topology_, a, b),
                                                          NcclAlgorithm::ring, protocol));
                }
                end = std::max(end, landed);
            }
    } else {
        // The tree's pipeline and NVLS in closed form: each waits for every channel it uses to
        // be free, then holds them all for its time, as one copy would.
        std::vector<int> channels;
        double ms = 0;
        if (c.choice.algorithm == NcclAlgorithm::nvls) {
            const NvlsAllReduce nvls = nvls_all_reduce(topology_, placed, c.bytes);
            channels = nvls.channels, ms = nvls.ms;
        } else {
            const TreeAllReduce tree = tree_all_reduce(topology_, placed, c.bytes, protocol);
            channels = tree.channels, ms = tree.ms();
        }
        double start = now_;
        for (int ch : channels)
            start = std::max(start, channel_free_[static_cast<std::size_t>(ch)]);
        end = start + ms;
        for (int ch : channels) channel_free_[static_cast<std::size_t>(ch)] = end;
    }
    if (step + 1 < steps) {
        timed_.push({end, seq_++, [this, ci, step] { collective_step(ci, step + 1); }});
        return;
    }
    timed_.push({end, seq_++, [this, ci] {
                     Collective& cc = collectives_[static_cast<std::size_t>(ci)];
                     cc.finished = true;
                     for (int m : cc.members)
                         span(m, " all-reduce", "all-reduce", "allreduce", cc.start, now_,
                              {TraceArg("bytes", cc.bytes)});
                     ++lane_free_[static_cast<std::size_t>(cc.stage)];
                     for (int m : cc.members) compute_phase_done(m);
                 }});
}

}  // namespace tandem::simulation

namespace tandem {
namespace {

// A step with no compute: one layer of `bytes` of gradients, so the step is its all-reduce.
class AllReduceOnly final : public CostModel {
public:
    explicit AllReduceOnly(std::size_t bytes) : bytes_(bytes) {}
    std::vector<LayerCost> layer_costs(const TopologyDevice&, std::int64_t) const override {
        LayerCost c;
        c.name = "gradients";
        c.parameter_bytes = bytes_;
        c.input_bytes = c.output_bytes = 4;
        return {c};
    }
    double loss_ms(const TopologyDevice&, std::int64_t) const override { return 0; }
    double update_ms(const TopologyDevice&, std::int64_t, std::size_t, std::size_t) const override {
        return 0;
    }
    double copy_gbs() const override { return 1e9; }
    double handoff_ms() const override { return 0; }

private:
    std::size_t bytes_;
};

}  // namespace

double simulate_all_reduce_ms(const Topology& topology, const std::vector<int>& devices,
                              std::size_t bytes, ReduceAlgorithm algorithm, bool parameter_server,
                              bool nccl_auto) {
    Plan p;
    p.groups = static_cast<int>(devices.size());
    p.batch = p.groups;
    p.devices = devices;
    p.algorithm = algorithm;
    p.parameter_server = parameter_server;
    p.nccl_auto = nccl_auto;
    p.bucket_bytes = bytes;  // one bucket
    return simulate(p, topology, AllReduceOnly(bytes)).step_ms;
}

}  // namespace tandem

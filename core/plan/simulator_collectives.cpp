// StepSimulator::collective_step: one all-reduce among GPUs, as NCCL runs it (collectives.h),
// or through a parameter server (Plan::parameter_server), its copies on the topology's channels,
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
    } else if (plan_.algorithm == ReduceAlgorithm::ring) {
        // 2(n-1) steps; in each, every member of every ring sends its next chunk to the next
        // member; the next step starts when all have landed.
        steps = 2 * (n - 1);
        if (c.rings.empty())
            for (const auto& ring : all_reduce_rings(topology_, placed)) {
                c.rings.emplace_back();
                for (int device : ring) c.rings.back().push_back(member_of(device));
            }
        const std::size_t share = c.rings.size() * static_cast<std::size_t>(n);
        const std::size_t chunk = (c.bytes + share - 1) / share;
        for (const auto& ring : c.rings)
            for (int r = 0; r < n; ++r)
                end = std::max(end,
                               reserve(ring[static_cast<std::size_t>(r)],
                                       ring[static_cast<std::size_t>((r + 1) % n)], chunk, now_));
    } else {
        // The tree's pipeline in closed form: it waits for every channel it uses to be free,
        // then holds them all for its time, as one copy would.
        const TreeAllReduce tree = tree_all_reduce(topology_, placed, c.bytes);
        double start = now_;
        for (int ch : tree.channels)
            start = std::max(start, channel_free_[static_cast<std::size_t>(ch)]);
        end = start + tree.ms();
        for (int ch : tree.channels) channel_free_[static_cast<std::size_t>(ch)] = end;
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
    double update_ms(const TopologyDevice&, std::size_t, std::size_t) const override { return 0; }
    double copy_gbs() const override { return 1e9; }
    double handoff_ms() const override { return 0; }

private:
    std::size_t bytes_;
};

}  // namespace

double simulate_all_reduce_ms(const Topology& topology, const std::vector<int>& devices,
                              std::size_t bytes, ReduceAlgorithm algorithm, bool parameter_server) {
    Plan p;
    p.groups = static_cast<int>(devices.size());
    p.batch = p.groups;
    p.devices = devices;
    p.algorithm = algorithm;
    p.parameter_server = parameter_server;
    p.bucket_bytes = bytes;  // one bucket
    return simulate(p, topology, AllReduceOnly(bytes)).step_ms;
}

}  // namespace tandem

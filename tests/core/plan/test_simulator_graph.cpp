// The simulator times stage-graph programs (issue 17, item 3): a diamond_graph's two branches run
// at once, so it takes the time of one branch, where the same four stages as a chain take both.
#include <gtest/gtest.h>

#include "base/error.h"
#include "layers/concat.h"
#include "layers/graph.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "parallel/unit_placement.h"
#include "plan/simulator.h"
#include "support/cpu_topology.h"

namespace tandem::test {
namespace {

// `layers` layers of equal cost: forward 1 ms, backward 2 ms per sample; free copies.
class EqualLayers final : public CostModel {
public:
    explicit EqualLayers(int layers) : layers_(layers) {}
    std::vector<LayerCost> layer_costs(const TopologyDevice&, std::int64_t batch) const override {
        std::vector<LayerCost> costs;
        for (int i = 0; i < layers_; ++i) {
            LayerCost c;
            c.name = "layer" + std::to_string(i + 1);
            c.forward_ms = 1.0 * double(batch), c.backward_ms = 2.0 * double(batch);
            c.input_bytes = c.output_bytes = 40 * static_cast<std::size_t>(batch);
            costs.push_back(c);
        }
        return costs;
    }
    double loss_ms(const TopologyDevice&, std::int64_t) const override { return 0; }
    double update_ms(const TopologyDevice&, std::int64_t, std::size_t, std::size_t) const override {
        return 0;
    }
    double copy_gbs() const override { return 1e9; }
    double handoff_ms() const override { return 0; }

private:
    int layers_;
};

// input -> 0; 0 -> 1 and 0 -> 2 (the branches); 1 -> 3 and 2 -> 3; 3 -> loss. Stage s runs layer s.
StageGraph diamond_graph() {
    StageGraph g;
    for (std::size_t s = 0; s < 4; ++s) g.stages.push_back({s, s + 1, {}, {}});
    const std::vector<std::pair<int, int>> edges{{kBatchInput, 0}, {0, 1}, {0, 2},
                                                 {1, 3},           {2, 3}, {3, kLoss}};
    for (const auto& [from, to] : edges) {
        const int id = static_cast<int>(g.edges.size());
        g.edges.push_back({id, from, to, 40});
        if (from >= 0) g.stages[static_cast<std::size_t>(from)].outputs.push_back(id);
        if (to >= 0) g.stages[static_cast<std::size_t>(to)].inputs.push_back(id);
    }
    return g;
}

Plan chain_plan(int stages, int micro, PipelineSchedule schedule) {
    Plan p;
    p.stages = stages, p.micro_batches = micro, p.batch = micro, p.schedule = schedule;
    for (int s = 1; s < stages; ++s) p.cuts.push_back(static_cast<std::size_t>(s));
    return p;
}

// [start, end) in ms of the span `name` of micro-batch `micro` on `track`.
std::pair<double, double> span_in(const Simulation& s, const std::string& track,
                                  const std::string& name, int micro) {
    for (const auto& e : s.events) {
        if (e.track != track || e.name != name) continue;
        for (const auto& a : e.args)
            if (a.key == "micro_batch" && std::get<std::int64_t>(a.value) == micro)
                return {e.start_us / 1e3, (e.start_us + e.duration_us) / 1e3};
    }
    ADD_FAILURE() << "no span " << name << " of micro-batch " << micro << " on " << track;
    return {0, 0};
}

TEST(SimulatorGraph, DiamondBranchesOverlapAndTakeTheTimeOfOne) {
    for (auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
        for (int micro : {1, 4}) {
            const std::string what =
                std::string(pipeline_schedule_name(schedule)) + " M=" + std::to_string(micro);
            Plan graph_plan = chain_plan(4, micro, schedule);
            graph_plan.cuts.clear();
            graph_plan.graph = diamond_graph();
            const Simulation branched =
                simulate(graph_plan, cpu_topology(4, 4), EqualLayers(4), true);
            // The same four stages one after another, and the diamond_graph less one branch.
            const Simulation chain =
                simulate(chain_plan(4, micro, schedule), cpu_topology(4, 4), EqualLayers(4));
            const Simulation one_branch =
                simulate(chain_plan(3, micro, schedule), cpu_topology(3, 3), EqualLayers(3));

            EXPECT_NEAR(branched.step_ms, one_branch.step_ms, 1e-6 * one_branch.step_ms) << what;
            // The chain runs the second branch's work after the first: one micro-batch through
            // it (forward and backward) longer at least.
            const double branch_ms = branched.devices[2].busy_ms / micro;
            EXPECT_GT(chain.step_ms, branched.step_ms + 0.99 * branch_ms) << what;
            EXPECT_NEAR(branched.devices[1].busy_ms, branched.devices[2].busy_ms, 1e-9) << what;
            // The branches' forwards of micro-batch 0 run at the same time.
            const auto left = span_in(branched, branched.devices[1].name, "forward", 0);
            const auto right = span_in(branched, branched.devices[2].name, "forward", 0);
            EXPECT_NEAR(left.first, right.first, 1e-9) << what;
            EXPECT_LT(right.first, left.second) << what;
        }
}

TEST(SimulatorGraph, AGraphPlanWithCutsIsRefused) {
    Plan p = chain_plan(4, 1, PipelineSchedule::gpipe);
    p.graph = diamond_graph();
    EXPECT_THROW(simulate(p, cpu_topology(4, 4), EqualLayers(4)), ConfigError);
}

// A graph net's placement (parallel.placement): the stage graph place_units derives runs the two
// branches' stages at the same time, as the engine's workers do.
TEST(SimulatorGraph, APlacementsBranchesOverlap) {
    auto g = std::make_shared<Graph>();
    g->set_name("g");
    g->add_input("x");
    auto linear = [](const std::string& name) {
        auto l = std::make_shared<Linear>(LinearOptions{4, 4, true, "kaiming"});
        l->set_name(name);
        return l;
    };
    g->add(linear("a1"), {"x"});
    g->add(linear("a2"), {"a1"});
    g->add(linear("b1"), {"x"});
    g->add(std::make_shared<Concat>(1), {"a2", "b1"});
    g->set_outputs({"concat1"});
    auto head = std::make_shared<Linear>(LinearOptions{8, 3, true, "kaiming"});
    head->set_name("head");
    Sequential net(std::vector<LayerPtr>{linear("embed"), g, head});
    const UnitPlacement placed =
        place_units(net, {{"embed"}, {"g.a1", "g.a2"}, {"g.b1"}, {"g.concat1", "head"}});
    for (auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
        Plan p = chain_plan(4, 2, schedule);
        p.cuts.clear();
        p.graph = placed.graph;
        const Simulation s = simulate(p, cpu_topology(4, 4),
                                      EqualLayers(static_cast<int>(placed.units.size())), true);
        const auto deep = span_in(s, s.devices[1].name, "forward", 0);
        const auto shallow = span_in(s, s.devices[2].name, "forward", 0);
        EXPECT_LT(shallow.first, deep.second) << pipeline_schedule_name(schedule);
        EXPECT_LT(deep.first, shallow.second) << pipeline_schedule_name(schedule);
    }
}

}  // namespace
}  // namespace tandem::test

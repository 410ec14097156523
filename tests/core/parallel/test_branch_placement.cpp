// Layer-division model parallelism (issue 18, item 4): a graph net's branches placed on
// different devices (parallel.placement) train_placed as one device does, alone, with data-parallel
// groups and with micro-batches under both schedules; a checkpoint saved under the placement
// loads on one device; the stage graph a placement makes; bad placements refused by name.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "device/cpu/cpu_device.h"
#include "engine/engine.h"
#include "layers/linear.h"
#include "parallel/unit_placement.h"
#include "support/branch_net.h"
#include "support/temp_dir.h"
#include "support/toy_batch.h"

namespace tandem::test {
namespace {

const Placement& kFour = kFourStages;
const Placement& kThree = kThreeStages;

std::vector<std::shared_ptr<Device>> placement_devices(int n) {
    std::vector<std::shared_ptr<Device>> d;
    for (int i = 0; i < n; ++i)
        d.push_back(std::make_shared<CpuDevice>(i, CpuDeviceOptions{std::size_t(1) << 30, 1}));
    return d;
}

EngineOptions placement_options(const Placement& placement, int groups = 1, int micro_batches = 1,
                                bool adam = false,
                                PipelineSchedule schedule = PipelineSchedule::gpipe) {
    EngineOptions o;
    o.net = branch_net();
    const int stages = placement.empty() ? 1 : static_cast<int>(placement.size());
    o.devices = placement_devices(groups * stages);
    if (adam) {
        o.optimizer.kind = OptimizerKind::adam;
        o.optimizer.adam.lr = 0.01f;
    } else {
        o.optimizer.sgd = SgdOptions{0.05f, 0.9f, 0.f, 1e-4f, true};
    }
    o.seed = 5;
    o.parallel.groups = groups, o.parallel.stages = stages,
    o.parallel.micro_batches = micro_batches;
    o.parallel.pipeline = schedule;
    o.parallel.placement = placement;
    return o;
}

using Weights = std::map<std::string, std::vector<float>>;

Weights placement_weights(Engine& e) {
    Weights w;
    for (auto& p : named_parameters(e.net())) w[p.name] = p.parameter->value.to_vector();
    return w;
}

Weights train_placed(EngineOptions o, int steps) {
    Engine engine(std::move(o));
    for (int s = 0; s < steps; ++s) {
        const Batch b = make_batch(s, 16);
        engine.step(b.images, b.labels);
    }
    return placement_weights(engine);
}

void expect_weights_match(const Weights& want, const Weights& got, const std::string& what) {
    ASSERT_EQ(want.size(), got.size()) << what;
    for (const auto& [name, a] : want) {
        const auto& b = got.at(name);
        ASSERT_EQ(a.size(), b.size()) << name;
        double diff = 0, norm = 1e-3;
        for (std::size_t i = 0; i < a.size(); ++i)
            diff = std::max(diff, std::abs(double(a[i]) - double(b[i]))),
            norm = std::max(norm, std::abs(double(a[i])));
        EXPECT_LE(diff, 1e-4 * norm) << what << ": " << name << " differs by " << diff;
    }
}

// The chain that the bounds cut, edge for edge.
void expect_chain(const UnitPlacement& placed, const std::vector<std::size_t>& bounds) {
    const StageGraph chain = chain_stage_graph(bounds);
    ASSERT_EQ(placed.graph.edges.size(), chain.edges.size());
    for (std::size_t e = 0; e < chain.edges.size(); ++e) {
        EXPECT_EQ(placed.graph.edges[e].from, chain.edges[e].from) << "edge " << e;
        EXPECT_EQ(placed.graph.edges[e].to, chain.edges[e].to) << "edge " << e;
    }
    ASSERT_EQ(placed.graph.stages.size(), chain.stages.size());
    for (int s = 0; s < static_cast<int>(chain.stages.size()); ++s) {
        EXPECT_EQ(placed.graph.stage(s).layer_begin, chain.stage(s).layer_begin);
        EXPECT_EQ(placed.graph.stage(s).layer_end, chain.stage(s).layer_end);
        EXPECT_EQ(placed.graph.stage(s).inputs, chain.stage(s).inputs);
        EXPECT_EQ(placed.graph.stage(s).outputs, chain.stage(s).outputs);
    }
}

TEST(UnitPlacement, TopLevelLayersInOrderAreTheChain) {
    auto net = branch_net();
    const UnitPlacement placed = place_units(*net, {{"flatten", "embed"}, {"g"}, {"head"}});
    ASSERT_EQ(placed.units.size(), 4u);  // the graph stays one unit: no node of it is named
    expect_chain(placed, {0, 2, 3, 4});
    // What the engine places for parallel.cuts and the automatic split.
    for (const std::vector<std::size_t>& bounds :
         std::vector<std::vector<std::size_t>>{{0, 4}, {0, 1, 4}, {0, 2, 3, 4}, {0, 1, 2, 3, 4}}) {
        const UnitPlacement chain = chain_units(*net, bounds);
        ASSERT_EQ(chain.units.size(), 4u);
        for (std::size_t u = 0; u < 4; ++u) EXPECT_EQ(chain.units[u].layer, u);
        expect_chain(chain, bounds);
    }
}

TEST(UnitPlacement, OpenedGraphsCutAsThePlacementOfTheirRanges) {
    auto net = branch_net();
    EXPECT_TRUE(opens_units(*net, Opening::graphs));
    EXPECT_EQ(chain_unit_count(*net, Opening::layers), 4u);
    ASSERT_EQ(chain_unit_count(*net, Opening::graphs), 9u);
    // What the automatic split and the planner cut: ranges of the units in the net's order.
    const UnitPlacement cut = chain_units(*net, {0, 2, 5, 7, 9}, Opening::graphs);
    const UnitPlacement placed = place_units(*net, kFour);
    EXPECT_EQ(cut.stage_names(*net), kFour);
    ASSERT_EQ(cut.units.size(), placed.units.size());
    for (std::size_t u = 0; u < cut.units.size(); ++u) {
        EXPECT_EQ(cut.units[u].name, placed.units[u].name);
        EXPECT_EQ(cut.units[u].inputs, placed.units[u].inputs);
    }
    ASSERT_EQ(cut.graph.edges.size(), placed.graph.edges.size());
    for (std::size_t e = 0; e < cut.graph.edges.size(); ++e) {
        EXPECT_EQ(cut.graph.edges[e].from, placed.graph.edges[e].from) << "edge " << e;
        EXPECT_EQ(cut.graph.edges[e].to, placed.graph.edges[e].to) << "edge " << e;
    }
    EXPECT_EQ(cut.edge_values, placed.edge_values);
    // The branches cut apart read the same value and run at once: stage 0 feeds both.
    EXPECT_EQ(cut.graph.stage(0).outputs.size(), 2u);
    // Embed's value is held once: the first branch to read it keeps it, the second does not.
    const auto first = cut.first_reads();
    EXPECT_EQ(first[2], cut.units[2].inputs);            // g.a1
    EXPECT_TRUE(first[5].empty()) << cut.units[5].name;  // g.b1, reading it again

    Sequential chain;
    chain.add(std::make_shared<Linear>(LinearOptions{4, 3}));
    EXPECT_FALSE(opens_units(chain, Opening::blocks));
    EXPECT_EQ(chain_unit_count(chain, Opening::graphs), 1u);
}

TEST(UnitPlacement, BranchesGetAnEdgePerReadingStage) {
    auto net = branch_net();
    const UnitPlacement four = place_units(*net, kFour);
    ASSERT_EQ(four.units.size(), 9u);  // flatten, embed, g's six nodes, head
    // batch -> 0; 0 -> 1 and 0 -> 2 (embed's value, once per branch); 1 -> 3, 2 -> 3; 3 -> loss.
    const std::vector<std::pair<int, int>> ends{{kBatchInput, 0}, {0, 1}, {0, 2},
                                                {1, 3},           {2, 3}, {3, kLoss}};
    ASSERT_EQ(four.graph.edges.size(), ends.size());
    for (std::size_t e = 0; e < ends.size(); ++e) {
        EXPECT_EQ(four.graph.edges[e].from, ends[e].first) << "edge " << e;
        EXPECT_EQ(four.graph.edges[e].to, ends[e].second) << "edge " << e;
    }
    EXPECT_EQ(four.edge_values[1], four.edge_values[2]) << "both branches read embed's value";
    EXPECT_EQ(four.graph.stage(0).outputs, (std::vector<int>{1, 2}));
    EXPECT_EQ(four.graph.stage(3).inputs, (std::vector<int>{3, 4}));
    EXPECT_EQ(four.stage_unit_names(2), (std::vector<std::string>{"g.b1", "g.btanh"}));

    // Branch b with the stem: stage 0 sends two different values, to stage 1 and to stage 2.
    const UnitPlacement three = place_units(*net, kThree);
    EXPECT_EQ(three.graph.stage(0).outputs.size(), 2u);
    EXPECT_EQ(three.graph.stage(2).inputs.size(), 2u);
    EXPECT_NE(three.edge_values[static_cast<std::size_t>(three.graph.stage(0).outputs[0])],
              three.edge_values[static_cast<std::size_t>(three.graph.stage(0).outputs[1])]);
}

void expect_placement_refused(const Placement& placement, const std::string& says) {
    auto net = branch_net();
    try {
        place_units(*net, placement);
        ADD_FAILURE() << "accepted; expected: " << says;
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
}

TEST(UnitPlacement, BadPlacementsNameTheUnitOrStage) {
    expect_placement_refused({{"flatten", "embed"}, {"g.a1", "g.zz"}, {"g"}, {"head"}},
                             "stage 2 names 'g.zz', which is no layer");
    expect_placement_refused({{"flatten", "embed", "g.a1"}, {"g"}, {"head"}},
                             "'g.a1' is in stage 1 and in stage 2");
    expect_placement_refused(
        {{"flatten", "embed"}, {"g.a1", "g.arelu", "g.a2", "g.b1", "g.btanh", "g.cat"}},
        "'head' is in no stage");
    expect_placement_refused({{"flatten", "embed"}, {}, {"g", "head"}}, "stage 2 names no layer");
    // Stage 1 reads a2 from stage 2, which reads a1 from stage 1.
    expect_placement_refused(
        {{"flatten", "embed", "g.a1", "g.b1", "g.btanh", "g.cat", "head"}, {"g.arelu", "g.a2"}},
        "stages 1, 2 feed each other in a cycle");
}

TEST(BranchPlacement, RefusedWithASplitOrAnotherStageCount) {
    EngineOptions o = placement_options(kFour);
    o.parallel.cuts = {2, 3, 4};
    EXPECT_THROW(Engine{o}, ConfigError);
    EngineOptions wrong = placement_options(kFour);
    wrong.parallel.stages = 3;
    wrong.devices.resize(3);
    try {
        Engine engine(wrong);
        ADD_FAILURE() << "4 stages placed on 3";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("placement lists 4 stages, parallel.stages is 3"),
                  std::string::npos)
            << e.what();
    }
}

TEST(BranchPlacement, TrainsAsOneDevice) {
    for (bool adam : {false, true}) {
        const std::string optimizer = adam ? "Adam" : "SGD";
        const Weights one = train_placed(placement_options({}, 1, 1, adam), 3);
        expect_weights_match(one, train_placed(placement_options(kFour, 1, 1, adam), 3),
                             optimizer + ", branches on 4 stages");
        expect_weights_match(one, train_placed(placement_options(kThree, 1, 1, adam), 3),
                             optimizer + ", 3 stages");
        expect_weights_match(one, train_placed(placement_options(kFour, 2, 1, adam), 3),
                             optimizer + ", 2 groups x 4 stages");
        for (auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
            expect_weights_match(
                one, train_placed(placement_options(kFour, 1, 2, adam, schedule), 3),
                optimizer + ", 2 micro-batches, " + std::string(pipeline_schedule_name(schedule)));
    }
}

TEST(BranchPlacement, RecomputeAndSyncBatchNormRunThroughTheUnits) {
    const Weights one = train_placed(placement_options({}), 2);
    EngineOptions recompute = placement_options(kThree, 1, 2);
    recompute.parallel.recompute = {true};
    expect_weights_match(one, train_placed(recompute, 2), "recompute");
    EngineOptions together = placement_options(kThree, 2, 2);
    together.parallel.batch_norm = BatchNormMode::sync;
    expect_weights_match(one, train_placed(together, 2),
                         "micro-batches together (sync batch norm)");
}

TEST(BranchPlacement, CheckpointsDoNotDependOnThePlacement) {
    TempDir dir;
    const std::string branched = (dir.path() / "branched.safetensors").string(),
                      single = (dir.path() / "one.safetensors").string();
    Engine placed(placement_options(kFour, 2, 2));
    for (int s = 0; s < 2; ++s) {
        const Batch b = make_batch(s, 16);
        placed.step(b.images, b.labels);
    }
    placed.save(branched);
    Engine one(placement_options({}));
    one.load(branched);
    EXPECT_EQ(placement_weights(one), placement_weights(placed));
    EXPECT_EQ(one.steps(), 2);

    // And back: one device's checkpoint under the placement, then a step on each alike.
    one.save(single);
    Engine again(placement_options(kThree));
    again.load(single);
    EXPECT_EQ(placement_weights(again), placement_weights(one));
    const Batch b = make_batch(2, 16);
    one.step(b.images, b.labels);
    again.step(b.images, b.labels);
    expect_weights_match(placement_weights(one), placement_weights(again), "a step after loading");
}

TEST(BranchPlacement, StagesNameTheirLayers) {
    Engine engine(placement_options(kFour));
    EXPECT_EQ(engine.stage_layer_names(1), (std::vector<std::string>{"g.a1", "g.arelu", "g.a2"}));
    EXPECT_EQ(engine.stage_layer_names(3), (std::vector<std::string>{"g.cat", "head"}));
    EXPECT_EQ(&engine.stage_device(0, 2), engine.options().devices[2].get());
}

}  // namespace
}  // namespace tandem::test

// Stage programs over a stage graph (issue 17, item 3): a diamond's programs op for op, a
// chain given as a graph gives the chain's programs, every graph and schedule runs to the end
// without a deadlock, and graphs that cannot run are refused naming the stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "base/error.h"
#include "parallel/program.h"

namespace tandem::test {
namespace {

// Stage s runs layer s; the edges in the order given, each carrying `bytes`.
StageGraph graph_of(int stages, const std::vector<std::pair<int, int>>& edges,
                    std::size_t bytes = 64) {
    StageGraph g;
    for (std::size_t s = 0; s < static_cast<std::size_t>(stages); ++s)
        g.stages.push_back({s, s + 1, {}, {}});
    for (const auto& [from, to] : edges) {
        const int id = static_cast<int>(g.edges.size());
        g.edges.push_back({id, from, to, bytes});
        if (from >= 0) g.stages[static_cast<std::size_t>(from)].outputs.push_back(id);
        if (to >= 0) g.stages[static_cast<std::size_t>(to)].inputs.push_back(id);
    }
    return g;
}

// input -e0-> 0; 0 -e1-> 1, 0 -e2-> 2 (the branches); 1 -e3-> 3, 2 -e4-> 3; 3 -e5-> loss.
StageGraph diamond() {
    return graph_of(4, {{kBatchInput, 0}, {0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, kLoss}});
}

ProgramSpec graph_spec(StageGraph graph, int groups, int micro, PipelineSchedule schedule) {
    ProgramSpec s;
    s.parallel.groups = groups, s.parallel.stages = static_cast<int>(graph.stages.size());
    s.parallel.micro_batches = micro, s.parallel.pipeline = schedule;
    std::size_t layers = 0;
    for (const StageNode& n : graph.stages) layers = std::max(layers, n.layer_end);
    s.parameter_bytes.assign(layers, {400, 4});
    s.graph = std::move(graph);
    s.replicas = groups;
    return s;
}

// "send activation 0 e1 @1": the op, its micro-batch, the edge and the device at its other end.
std::vector<std::string> edge_lines(const DeviceProgram& program) {
    std::vector<std::string> out;
    for (const Op& op : program.ops) {
        std::string line(op_name(op.kind));
        if (op.micro_batch >= 0) line += " " + std::to_string(op.micro_batch);
        if (op.edge >= 0) line += " e" + std::to_string(op.edge);
        if (op.peer >= 0) line += " @" + std::to_string(op.peer);
        out.push_back(line);
    }
    return out;
}

using Lines = std::vector<std::string>;

TEST(ProgramGraph, DiamondGpipeSendsToBothBranchesAndSumsTheirGradients) {
    const auto programs = build_programs(graph_spec(diamond(), 1, 2, PipelineSchedule::gpipe));
    ASSERT_EQ(programs.size(), 4u);
    EXPECT_EQ(
        edge_lines(programs[0]),
        (Lines{"input 0 e0", "forward 0", "send activation 0 e1 @1", "send activation 0 e2 @2",
               "input 1 e0", "forward 1", "send activation 1 e1 @1", "send activation 1 e2 @2",
               "receive gradient 1 e1 @1", "receive gradient 1 e2 @2", "backward 1",
               "receive gradient 0 e1 @1", "receive gradient 0 e2 @2", "backward 0", "barrier",
               "optimizer"}));
    EXPECT_EQ(edge_lines(programs[1]),
              (Lines{"receive activation 0 e1 @0", "forward 0", "send activation 0 e3 @3",
                     "receive activation 1 e1 @0", "forward 1", "send activation 1 e3 @3",
                     "receive gradient 1 e3 @3", "backward 1", "send gradient 1 e1 @0",
                     "receive gradient 0 e3 @3", "backward 0", "send gradient 0 e1 @0", "barrier",
                     "optimizer"}));
    EXPECT_EQ(edge_lines(programs[2]),
              (Lines{"receive activation 0 e2 @0", "forward 0", "send activation 0 e4 @3",
                     "receive activation 1 e2 @0", "forward 1", "send activation 1 e4 @3",
                     "receive gradient 1 e4 @3", "backward 1", "send gradient 1 e2 @0",
                     "receive gradient 0 e4 @3", "backward 0", "send gradient 0 e2 @0", "barrier",
                     "optimizer"}));
    EXPECT_EQ(
        edge_lines(programs[3]),
        (Lines{"receive activation 0 e3 @1", "receive activation 0 e4 @2", "forward 0", "loss 0 e5",
               "receive activation 1 e3 @1", "receive activation 1 e4 @2", "forward 1", "loss 1 e5",
               "loss gradient 1 e5", "backward 1", "send gradient 1 e3 @1", "send gradient 1 e4 @2",
               "loss gradient 0 e5", "backward 0", "send gradient 0 e3 @1", "send gradient 0 e4 @2",
               "barrier", "optimizer"}));
    // What moves along an edge is its tensor (the loss ops move nothing).
    for (const auto& program : programs)
        for (const Op& op : program.ops)
            if (op.peer >= 0 || op.kind == OpKind::load_input) {
                EXPECT_EQ(op.bytes, 64u) << op_name(op.kind);
            }
}

TEST(ProgramGraph, DiamondOneFOneBWarmsUpByDepth) {
    // Depths: stage 0 two, the branches one, stage 3 none: warm-ups of 2, 2, 2 and 1 forwards.
    const auto programs =
        build_programs(graph_spec(diamond(), 1, 2, PipelineSchedule::one_f_one_b));
    EXPECT_EQ(
        edge_lines(programs[0]),
        (Lines{"input 0 e0", "forward 0", "send activation 0 e1 @1", "send activation 0 e2 @2",
               "input 1 e0", "forward 1", "send activation 1 e1 @1", "send activation 1 e2 @2",
               "receive gradient 0 e1 @1", "receive gradient 0 e2 @2", "backward 0",
               "receive gradient 1 e1 @1", "receive gradient 1 e2 @2", "backward 1", "barrier",
               "optimizer"}));
    EXPECT_EQ(edge_lines(programs[2]),
              (Lines{"receive activation 0 e2 @0", "forward 0", "send activation 0 e4 @3",
                     "receive activation 1 e2 @0", "forward 1", "send activation 1 e4 @3",
                     "receive gradient 0 e4 @3", "backward 0", "send gradient 0 e2 @0",
                     "receive gradient 1 e4 @3", "backward 1", "send gradient 1 e2 @0", "barrier",
                     "optimizer"}));
    EXPECT_EQ(
        edge_lines(programs[3]),
        (Lines{"receive activation 0 e3 @1", "receive activation 0 e4 @2", "forward 0", "loss 0 e5",
               "loss gradient 0 e5", "backward 0", "send gradient 0 e3 @1", "send gradient 0 e4 @2",
               "receive activation 1 e3 @1", "receive activation 1 e4 @2", "forward 1", "loss 1 e5",
               "loss gradient 1 e5", "backward 1", "send gradient 1 e3 @1", "send gradient 1 e4 @2",
               "barrier", "optimizer"}));
}

TEST(ProgramGraph, SecondGroupTalksToItsOwnStages) {
    const auto programs = build_programs(graph_spec(diamond(), 2, 1, PipelineSchedule::gpipe));
    ASSERT_EQ(programs.size(), 8u);
    EXPECT_EQ(programs[4].group, 1);
    EXPECT_EQ(programs[4].stage, 0);
    std::set<int> peers;
    for (const Op& op : programs[4].ops)
        if (op.peer >= 0) peers.insert(op.peer);
    EXPECT_EQ(peers, (std::set<int>{5, 6}));
}

TEST(ProgramGraph, AChainAsAGraphGivesTheChainsPrograms) {
    const std::vector<std::size_t> bounds{0, 1, 3, 4}, bytes{10, 20, 30, 40};
    for (auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
        for (int micro : {1, 2, 5})
            for (int variant = 0; variant < 4; ++variant) {
                ProgramSpec chain;
                chain.parallel.groups = 2, chain.parallel.stages = 3,
                chain.parallel.micro_batches = micro;
                chain.parallel.pipeline = schedule;
                chain.parallel.bucket_bytes = 100;
                if (variant == 1) chain.parallel.recompute = {true};
                if (variant == 2) chain.mode = Mode::eval;
                if (variant == 3) {
                    if (schedule != PipelineSchedule::gpipe) continue;
                    chain.parallel.batch_norm = BatchNormMode::sync;
                }
                chain.parameter_bytes = {{400, 4}, {}, {800, 8}, {40}};
                chain.replicas = 2;
                chain.bounds = bounds, chain.boundary_bytes = bytes;
                ProgramSpec as_graph = chain;
                as_graph.graph = chain_stage_graph(bounds, bytes);
                as_graph.bounds.clear(), as_graph.boundary_bytes.clear();
                const auto want = build_programs(chain), got = build_programs(as_graph);
                ASSERT_EQ(got.size(), want.size());
                for (std::size_t d = 0; d < got.size(); ++d)
                    EXPECT_EQ(got[d].ops, want[d].ops)
                        << "device " << d << " variant " << variant << " M=" << micro;
            }
}

TEST(ProgramGraph, AChainsEdgesSitAtItsBounds) {
    ProgramSpec s;
    s.parallel.stages = 2, s.parallel.micro_batches = 1;
    s.parameter_bytes = {{}, {}, {}};
    s.bounds = {0, 2, 3};
    s.boundary_bytes = {7, 8, 9};
    const auto programs = build_programs(s);
    EXPECT_EQ(edge_lines(programs[0]),
              (Lines{"input 0 e0", "forward 0", "send activation 0 e1 @1",
                     "receive gradient 0 e1 @1", "backward 0", "barrier", "optimizer"}));
    EXPECT_EQ(edge_lines(programs[1]),
              (Lines{"receive activation 0 e1 @0", "forward 0", "loss 0 e2", "loss gradient 0 e2",
                     "backward 0", "send gradient 0 e1 @0", "barrier", "optimizer"}));
    const StageGraph g = chain_stage_graph(s.bounds, s.boundary_bytes);
    ASSERT_EQ(g.edges.size(), 3u);
    EXPECT_EQ(g.edges[1].from, 0);
    EXPECT_EQ(g.edges[1].to, 1);
    EXPECT_EQ(g.edges[1].bytes, 8u);
    EXPECT_EQ(g.loss_stage(), 1);
    EXPECT_EQ(stage_depths(g), (std::vector<int>{1, 0}));
}

// Plays the programs as the engine's workers would (each in order, a receive waiting for its
// edge's send): true when every device reaches its end. Every send must be taken once.
::testing::AssertionResult runs_to_the_end(const std::vector<DeviceProgram>& programs) {
    using Key = std::tuple<bool, int, int, int>;  // backward, group, edge, micro-batch
    std::multiset<Key> posted;
    std::vector<std::size_t> at(programs.size(), 0);
    for (bool progress = true; progress;) {
        progress = false;
        for (std::size_t d = 0; d < programs.size(); ++d) {
            const int group = programs[d].group;
            for (; at[d] < programs[d].ops.size(); ++at[d]) {
                const Op& op = programs[d].ops[at[d]];
                const bool backward =
                    op.kind == OpKind::send_gradient || op.kind == OpKind::receive_gradient;
                const Key key{backward, group, op.edge, op.micro_batch};
                if (op.kind == OpKind::send_activation || op.kind == OpKind::send_gradient) {
                    posted.insert(key);
                } else if (op.kind == OpKind::receive_activation ||
                           op.kind == OpKind::receive_gradient) {
                    const auto it = posted.find(key);
                    if (it == posted.end()) break;  // waits
                    posted.erase(it);
                }
                progress = true;
            }
        }
    }
    for (std::size_t d = 0; d < programs.size(); ++d)
        if (at[d] < programs[d].ops.size())
            return ::testing::AssertionFailure()
                   << "device " << d << " waits forever at op " << at[d] << " ("
                   << op_name(programs[d].ops[at[d]].kind) << ")";
    if (!posted.empty())
        return ::testing::AssertionFailure() << posted.size() << " tensors sent and never taken";
    return ::testing::AssertionSuccess();
}

TEST(ProgramGraph, NoGraphDeadlocksUnderEitherSchedule) {
    const std::vector<std::pair<std::string, StageGraph>> graphs{
        {"diamond", diamond()},
        // A long branch beside a short one, and a skip from the first stage to the last.
        {"uneven",
         graph_of(5,
                  {{kBatchInput, 0}, {0, 1}, {1, 2}, {2, 4}, {0, 3}, {3, 4}, {0, 4}, {4, kLoss}})},
        // Two stages reading the batch, joined at the end.
        {"two inputs",
         graph_of(3, {{kBatchInput, 0}, {kBatchInput, 1}, {0, 2}, {1, 2}, {2, kLoss}})},
        // A fan-out whose branches meet at different depths.
        {"ladder", graph_of(5, {{kBatchInput, 0},
                                {0, 1},
                                {0, 2},
                                {1, 2},
                                {2, 3},
                                {1, 3},
                                {3, 4},
                                {2, 4},
                                {4, kLoss}})},
    };
    for (const auto& [name, graph] : graphs)
        for (auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
            for (int micro : {1, 2, 3, 8})
                for (bool sync : {false, true}) {
                    if (sync && schedule != PipelineSchedule::gpipe) continue;
                    ProgramSpec s = graph_spec(graph, 2, micro, schedule);
                    if (sync) s.parallel.batch_norm = BatchNormMode::sync;
                    EXPECT_TRUE(runs_to_the_end(build_programs(s)))
                        << name << " " << pipeline_schedule_name(schedule) << " M=" << micro
                        << (sync ? " sync" : "");
                }
}

TEST(ProgramGraph, TheCheckerCatchesADeadlock) {
    // The player above must be able to fail: two chain stages both receiving first.
    ProgramSpec s;
    s.parallel.stages = 2, s.parallel.micro_batches = 1;
    s.parameter_bytes = {{}, {}};
    s.bounds = {0, 1, 2};
    auto programs = build_programs(s);
    const Op early{.kind = OpKind::receive_gradient, .micro_batch = 0, .peer = 1, .edge = 1};
    programs[0].ops.insert(programs[0].ops.begin(), early);
    programs[0].ops.erase(
        std::find_if(programs[0].ops.begin() + 1, programs[0].ops.end(),
                     [](const Op& op) { return op.kind == OpKind::receive_gradient; }));
    EXPECT_FALSE(runs_to_the_end(programs));
}

// build_programs on `graph` throws ConfigError whose message holds `says`.
void expect_graph_refused(const StageGraph& graph, const std::string& says, int stages = -1) {
    ProgramSpec s = graph_spec(graph, 1, 2, PipelineSchedule::gpipe);
    if (stages >= 0) s.parallel.stages = stages;
    try {
        build_programs(s);
        ADD_FAILURE() << "accepted; expected: " << says;
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
}

TEST(ProgramGraph, GraphsThatCannotRunAreRefusedNamingTheStage) {
    expect_graph_refused(graph_of(3, {{kBatchInput, 0}, {0, 1}, {1, 2}, {2, 1}, {2, kLoss}}),
                         "stages 1 -> 2 -> 1 form a cycle");
    expect_graph_refused(graph_of(4, {{kBatchInput, 0}, {0, 1}, {0, 2}, {1, 3}, {3, kLoss}}),
                         "stage 2 has no path to the loss");
    expect_graph_refused(graph_of(3, {{kBatchInput, 0}, {0, 1}, {0, 2}, {1, kLoss}, {2, kLoss}}),
                         "stages 1, 2 all compute the loss");
    expect_graph_refused(graph_of(2, {{kBatchInput, 0}, {0, 1}}), "no stage computes the loss");
    expect_graph_refused(graph_of(3, {{kBatchInput, 0}, {0, 2}, {1, 2}, {2, kLoss}}),
                         "stage 1 has no input");
    expect_graph_refused(graph_of(2, {{kBatchInput, 0}, {0, 0}, {0, 1}, {1, kLoss}}),
                         "from stage 0 to itself");
    expect_graph_refused(graph_of(2, {{kBatchInput, kLoss}, {kBatchInput, 0}, {0, 1}, {1, kLoss}}),
                         "straight to the loss");
    expect_graph_refused(diamond(), "3 stages, but the stage graph has 4", 3);

    StageGraph overlapping = diamond();
    overlapping.stages[2].layer_begin = 1;
    expect_graph_refused(overlapping, "stages 1 and 2 both run layer 1");
    StageGraph empty_stage = diamond();
    empty_stage.stages[1].layer_end = 1;
    expect_graph_refused(empty_stage, "stage 1 has no layers");
    StageGraph mislisted = diamond();
    mislisted.stages[1].inputs = {2};
    expect_graph_refused(
        mislisted, "stage 1 lists edge 2 among its inputs, but it goes from stage 0 to stage 2");
    StageGraph unlisted = diamond();
    unlisted.stages[3].inputs = {3};
    expect_graph_refused(unlisted,
                         "edge 4 goes to stage 3, which does not list it among its inputs");

    ProgramSpec both = graph_spec(diamond(), 1, 1, PipelineSchedule::gpipe);
    both.bounds = {0, 1, 2, 3, 4};
    EXPECT_THROW(build_programs(both), ConfigError);
}

}  // namespace
}  // namespace tandem::test

// Stage programs: the ops each device runs in a step, as the engine executes them and the
// simulator times them.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "layers/layer.h"
#include "parallel/buckets.h"
#include "parallel/program.h"

namespace tandem::test {
namespace {

// Four layers; layers 0 and 2 hold a weight and a bias, 1 and 3 none.
ProgramSpec spec(int groups, int stages, int micro,
                 PipelineSchedule schedule = PipelineSchedule::gpipe) {
    ProgramSpec s;
    s.parallel.groups = groups, s.parallel.stages = stages, s.parallel.micro_batches = micro;
    s.parallel.pipeline = schedule;
    s.parameter_bytes = {{4000, 40}, {}, {800, 8}, {}};
    s.bounds = stages == 1 ? std::vector<std::size_t>{0, 4} : std::vector<std::size_t>{0, 2, 4};
    s.replicas = groups;
    return s;
}

// "forward 0", "all-reduce b1 lane", "backward 0 [2,4)" (a part of the stage's layers), ...:
// one line per op, for readable comparisons.
std::vector<std::string> lines(const DeviceProgram& program) {
    std::vector<std::string> out;
    std::size_t begin = 0, end = 0;  // the stage's layers, from its forward
    for (const Op& op : program.ops)
        if (op.kind == OpKind::forward) begin = op.layer_begin, end = op.layer_end;
    for (const Op& op : program.ops) {
        std::string line(op_name(op.kind));
        if (op.micro_batch >= 0) line += " " + std::to_string(op.micro_batch);
        if (op.micro_batch == kEveryMicroBatch &&
            (op.kind == OpKind::forward || op.kind == OpKind::backward))
            line += " all";
        if (op.kind == OpKind::backward && (op.layer_begin != begin || op.layer_end != end))
            line +=
                " [" + std::to_string(op.layer_begin) + "," + std::to_string(op.layer_end) + ")";
        if (op.kind == OpKind::all_reduce)
            line += " b" + std::to_string(op.bucket) + (op.on_lane ? " lane" : "");
        out.push_back(line);
    }
    return out;
}

using Lines = std::vector<std::string>;

TEST(Program, OneDeviceGpipe) {
    const auto programs = build_programs(spec(1, 1, 2));
    ASSERT_EQ(programs.size(), 1u);
    EXPECT_EQ(lines(programs[0]), (Lines{"input 0", "forward 0", "loss 0", "input 1", "forward 1",
                                         "loss 1", "loss gradient 1", "backward 1",
                                         "loss gradient 0", "backward 0", "barrier", "optimizer"}));
}

TEST(Program, TwoStagesOneFOneBHandOffToTheirPeers) {
    const auto programs = build_programs(spec(1, 2, 3, PipelineSchedule::one_f_one_b));
    ASSERT_EQ(programs.size(), 2u);
    EXPECT_EQ(lines(programs[0]),
              (Lines{"input 0", "forward 0", "send activation 0", "input 1", "forward 1",
                     "send activation 1", "receive gradient 0", "backward 0", "input 2",
                     "forward 2", "send activation 2", "receive gradient 1", "backward 1",
                     "receive gradient 2", "backward 2", "barrier", "optimizer"}));
    EXPECT_EQ(lines(programs[1]), (Lines{"receive activation 0",
                                         "forward 0",
                                         "loss 0",
                                         "loss gradient 0",
                                         "backward 0",
                                         "send gradient 0",
                                         "receive activation 1",
                                         "forward 1",
                                         "loss 1",
                                         "loss gradient 1",
                                         "backward 1",
                                         "send gradient 1",
                                         "receive activation 2",
                                         "forward 2",
                                         "loss 2",
                                         "loss gradient 2",
                                         "backward 2",
                                         "send gradient 2",
                                         "barrier",
                                         "optimizer"}));
    for (const Op& op : programs[0].ops)
        if (op.peer >= 0) {
            EXPECT_EQ(op.peer, 1);
        }
    for (const Op& op : programs[1].ops)
        if (op.peer >= 0) {
            EXPECT_EQ(op.peer, 0);
        }
}

TEST(Program, LastBackwardPostsEachBucketOnceItsLayersAreDone) {
    ProgramSpec s = spec(2, 1, 2);
    s.parallel.bucket_bytes = 810;  // buckets: {8, 800} (layer 2), {40} and {4000} (layer 0)
    const auto programs = build_programs(s);
    ASSERT_EQ(programs.size(), 2u);
    const Lines want{"input 0",
                     "forward 0",
                     "loss 0",
                     "input 1",
                     "forward 1",
                     "loss 1",
                     "loss gradient 1",
                     "backward 1",
                     "loss gradient 0",
                     "backward 0 [2,4)",
                     "all-reduce b0 lane",
                     "backward 0 [0,2)",
                     "all-reduce b1 lane",
                     "all-reduce b2 lane",
                     "wait for all-reduce",
                     "barrier",
                     "optimizer"};
    EXPECT_EQ(lines(programs[0]), want);
    EXPECT_EQ(lines(programs[1]), want);
    const auto buckets = stage_buckets(s, 0);
    ASSERT_EQ(buckets.size(), 3u);
    EXPECT_EQ(buckets[0].bytes, 808u);
    EXPECT_EQ(buckets[0].completed_by, 2u);
    EXPECT_EQ(buckets[2].bytes, 4000u);
    EXPECT_EQ(buckets[2].completed_by, 0u);

    s.parallel.overlap_backward = false;
    EXPECT_EQ(lines(build_programs(s)[0]),
              (Lines{"input 0", "forward 0", "loss 0", "input 1", "forward 1", "loss 1",
                     "loss gradient 1", "backward 1", "loss gradient 0", "backward 0",
                     "all-reduce b0", "all-reduce b1", "all-reduce b2", "barrier", "optimizer"}));
}

TEST(Program, BucketsGroupAsGradientBucketsDo) {
    // The engine builds GradientBuckets from the stage's gradients last first; the program's
    // buckets must be the same ones, or a bucket would be posted before its layers are done.
    ProgramSpec s = spec(2, 2, 1);
    s.parameter_bytes = {{400, 4}, {1200, 12}, {}, {400, 4}};
    for (std::size_t bucket_bytes :
         {std::size_t(1), std::size_t(404), std::size_t(1000), std::size_t(1 << 20)}) {
        s.parallel.bucket_bytes = bucket_bytes;
        for (int stage = 0; stage < 2; ++stage) {
            std::vector<std::pair<std::string, Tensor>> grads;
            for (std::size_t i = s.bounds[static_cast<std::size_t>(stage) + 1];
                 i-- > s.bounds[static_cast<std::size_t>(stage)];)
                for (auto it = s.parameter_bytes[i].rbegin(); it != s.parameter_bytes[i].rend();
                     ++it)
                    grads.emplace_back("g", Tensor::zeros(Shape{static_cast<std::int64_t>(*it / 4)},
                                                          host_device()));
            const GradientBuckets engine(grads, bucket_bytes);
            const auto program = stage_buckets(s, stage);
            ASSERT_EQ(program.size(), engine.size()) << bucket_bytes;
            for (std::size_t b = 0; b < program.size(); ++b)
                EXPECT_EQ(program[b].bytes, engine.bucket(b).flat.nbytes())
                    << bucket_bytes << " bucket " << b;
        }
    }
}

TEST(Program, RecomputeForwardKeepsNothingAndBackwardRecomputesFirst) {
    ProgramSpec s = spec(1, 2, 2);
    s.parallel.recompute = {false, true};
    const auto programs = build_programs(s);
    for (const Op& op : programs[0].ops) {
        EXPECT_NE(op.kind, OpKind::recompute);
        if (op.kind == OpKind::forward) {
            EXPECT_TRUE(op.keeps_activations);
        }
    }
    EXPECT_EQ(lines(programs[1]),
              (Lines{"receive activation 0", "forward 0", "loss 0", "receive activation 1",
                     "forward 1", "loss 1", "loss gradient 1", "recompute 1", "backward 1",
                     "send gradient 1", "loss gradient 0", "recompute 0", "backward 0",
                     "send gradient 0", "barrier", "optimizer"}));
    for (const Op& op : programs[1].ops)
        if (op.kind == OpKind::forward) {
            EXPECT_FALSE(op.keeps_activations);
        }
}

TEST(Program, DeterministicModeStashesEachMicroBatchAndReducesAfterBackward) {
    ProgramSpec s = spec(2, 1, 2);
    s.parallel.deterministic = true;
    EXPECT_EQ(lines(build_programs(s)[1]),
              (Lines{"input 0", "forward 0", "loss 0", "input 1", "forward 1", "loss 1",
                     "loss gradient 1", "backward 1", "stash gradients 1", "loss gradient 0",
                     "backward 0", "stash gradients 0", "sum gradients", "all-reduce b0", "barrier",
                     "optimizer"}));
}

TEST(Program, SyncBatchNormRunsTheMicroBatchesTogether) {
    ProgramSpec s = spec(2, 2, 2);
    s.parallel.batch_norm = BatchNormMode::sync;
    const auto programs = build_programs(s);
    EXPECT_EQ(lines(programs[2]),
              (Lines{"input 0", "input 1", "forward all", "send activation 0", "send activation 1",
                     "receive gradient 0", "receive gradient 1", "backward all", "all-reduce b0",
                     "barrier", "optimizer"}));
    EXPECT_EQ(
        lines(programs[3]),
        (Lines{"receive activation 0", "receive activation 1", "forward all", "loss 0", "loss 1",
               "loss gradient 0", "loss gradient 1", "backward all", "send gradient 0",
               "send gradient 1", "all-reduce b0", "barrier", "optimizer"}));
}

TEST(Program, UpdatePhaseAveragesOnItsStepsAndFoldsDeferredStatistics) {
    ProgramSpec s = spec(2, 1, 1);
    s.parallel.average_every = 3;
    s.parallel.batch_norm = BatchNormMode::deferred;
    for (std::int64_t step = 0; step < 6; ++step) {
        s.step = step;
        const Lines got = lines(build_programs(s)[0]);
        const bool averages = step == 2 || step == 5;
        Lines tail{"barrier", "optimizer"};
        if (averages) tail.push_back("average weights");
        tail.push_back("batch-norm statistics");
        EXPECT_EQ(Lines(got.end() - static_cast<std::ptrdiff_t>(tail.size()), got.end()), tail)
            << "step " << step;
        for (const auto& line : got)
            EXPECT_EQ(line.find("all-reduce"), std::string::npos) << "no gradient all-reduce";
    }
}

TEST(Program, EvaluationRunsForwardsOnly) {
    ProgramSpec s = spec(2, 2, 2);
    s.mode = Mode::eval;
    const auto programs = build_programs(s);
    EXPECT_EQ(lines(programs[0]), (Lines{"input 0", "forward 0", "send activation 0", "input 1",
                                         "forward 1", "send activation 1"}));
    EXPECT_EQ(lines(programs[1]), (Lines{"receive activation 0", "forward 0", "loss 0",
                                         "receive activation 1", "forward 1", "loss 1"}));
}

TEST(Program, EverySendMeetsOneReceiveAndEveryLayerRunsOnce) {
    for (auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
        for (int micro : {1, 2, 5})
            for (bool overlap : {false, true}) {
                ProgramSpec s = spec(2, 2, micro, schedule);
                s.parallel.overlap_backward = overlap;
                s.parallel.bucket_bytes = 100;
                s.boundary_bytes = {10, 20, 30};
                const auto programs = build_programs(s);
                // (from, to, direction, micro-batch) -> bytes, for sends and receives apart.
                std::map<std::tuple<int, int, bool, int>, std::size_t> sends, receives;
                for (std::size_t d = 0; d < programs.size(); ++d) {
                    std::map<int, std::size_t> backward_layers;  // micro-batch -> layers covered
                    for (const Op& op : programs[d].ops) {
                        const int self = static_cast<int>(d);
                        if (op.kind == OpKind::send_activation)
                            sends[{self, op.peer, true, op.micro_batch}] = op.bytes;
                        if (op.kind == OpKind::send_gradient)
                            sends[{self, op.peer, false, op.micro_batch}] = op.bytes;
                        if (op.kind == OpKind::receive_activation)
                            receives[{op.peer, self, true, op.micro_batch}] = op.bytes;
                        if (op.kind == OpKind::receive_gradient)
                            receives[{op.peer, self, false, op.micro_batch}] = op.bytes;
                        if (op.kind == OpKind::backward)
                            backward_layers[op.micro_batch] += op.layer_end - op.layer_begin;
                    }
                    for (int m = 0; m < micro; ++m)
                        EXPECT_EQ(backward_layers[m], 2u) << "device " << d << " mb " << m;
                }
                EXPECT_EQ(sends, receives);
                EXPECT_EQ(sends.size(), static_cast<std::size_t>(2 * 2 * micro));
                for (const auto& [key, bytes] : sends) EXPECT_EQ(bytes, 20u);
            }
}

TEST(Program, BoundsThatDoNotFitAreRefused) {
    ProgramSpec s = spec(1, 2, 1);
    s.bounds = {0, 0, 4};
    EXPECT_THROW(build_programs(s), ConfigError);
    s.bounds = {0, 2, 3};
    EXPECT_THROW(build_programs(s), ConfigError);
    s.bounds = {0, 4};
    EXPECT_THROW(build_programs(s), ConfigError);
}

}  // namespace
}  // namespace tandem::test

#include <gtest/gtest.h>

#include "base/error.h"
#include "parallel/schedule.h"

namespace tandem::test {
namespace {

std::string text(const std::vector<StageOp>& ops) {
    std::string s;
    for (const auto& op : ops) {
        s.push_back(op.kind == StageOp::forward ? 'F' : 'B');
        s.append(std::to_string(op.micro_batch)).push_back(' ');
    }
    return s;
}

TEST(PipelineSchedule, GpipeFillsThenDrains) {
    EXPECT_EQ(text(stage_ops(PipelineSchedule::gpipe, 2, 0, 3)), "F0 F1 F2 B2 B1 B0 ");
    EXPECT_EQ(micro_batches_in_flight(PipelineSchedule::gpipe, 4, 3, 8), 8);
}

TEST(PipelineSchedule, OneForwardOneBackward) {
    EXPECT_EQ(text(stage_ops(PipelineSchedule::one_f_one_b, 3, 0, 5)),
              "F0 F1 F2 B0 F3 B1 F4 B2 B3 B4 ");
    EXPECT_EQ(text(stage_ops(PipelineSchedule::one_f_one_b, 3, 2, 5)),
              "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 ");
    EXPECT_EQ(text(stage_ops(PipelineSchedule::one_f_one_b, 4, 0, 2)), "F0 F1 B0 B1 ");
    EXPECT_EQ(micro_batches_in_flight(PipelineSchedule::one_f_one_b, 4, 1, 8), 3);
}

// Every micro-batch runs forward once and backward once, forward first, and no more than the
// in-flight count are held at once.
TEST(PipelineSchedule, EveryOrderIsComplete) {
    for (auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
        for (int stages = 1; stages <= 5; ++stages)
            for (int stage = 0; stage < stages; ++stage)
                for (int m = 1; m <= 9; ++m) {
                    std::vector<int> state(static_cast<std::size_t>(m), 0);
                    int held = 0, most = 0;
                    for (const auto& op : stage_ops(schedule, stages, stage, m)) {
                        int& s = state[static_cast<std::size_t>(op.micro_batch)];
                        ASSERT_EQ(s, op.kind == StageOp::forward ? 0 : 1);
                        s += 1;
                        held += op.kind == StageOp::forward ? 1 : -1;
                        most = std::max(most, held);
                    }
                    for (int s : state) EXPECT_EQ(s, 2);
                    EXPECT_EQ(most, micro_batches_in_flight(schedule, stages, stage, m));
                }
}

TEST(PipelineSchedule, NamesParse) {
    EXPECT_EQ(parse_pipeline_schedule("1f1b"), PipelineSchedule::one_f_one_b);
    EXPECT_EQ(pipeline_schedule_name(PipelineSchedule::gpipe), "gpipe");
    try {
        parse_pipeline_schedule("zigzag");
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("gpipe, 1f1b"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace tandem::test

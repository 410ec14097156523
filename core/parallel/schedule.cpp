#include "parallel/schedule.h"

#include <algorithm>

#include "base/error.h"

namespace tandem {

std::string_view pipeline_schedule_name(PipelineSchedule schedule) {
    return schedule == PipelineSchedule::gpipe ? "gpipe" : "1f1b";
}

PipelineSchedule parse_pipeline_schedule(std::string_view name) {
    if (name == "gpipe") return PipelineSchedule::gpipe;
    if (name == "1f1b") return PipelineSchedule::one_f_one_b;
    TANDEM_THROW(ConfigError) << "unknown pipeline schedule '" << name << "' (known: gpipe, 1f1b)";
}

std::vector<StageOp> stage_ops(PipelineSchedule schedule, int stages, int stage, int micro_batches) {
    TANDEM_CHECK_AS(ConfigError, stages >= 1 && stage >= 0 && stage < stages && micro_batches >= 1)
        << "stage " << stage << " of " << stages << " with " << micro_batches
        << " micro-batches is not a pipeline";
    std::vector<StageOp> ops;
    ops.reserve(2 * static_cast<std::size_t>(micro_batches));
    if (schedule == PipelineSchedule::gpipe) {
        for (int m = 0; m < micro_batches; ++m) ops.push_back({StageOp::forward, m});
        for (int m = micro_batches; m-- > 0;) ops.push_back({StageOp::backward, m});
        return ops;
    }
    const int warmup = micro_batches_in_flight(schedule, stages, stage, micro_batches);
    int next_forward = 0, next_backward = 0;
    for (; next_forward < warmup; ++next_forward) ops.push_back({StageOp::forward, next_forward});
    while (next_forward < micro_batches) {
        ops.push_back({StageOp::backward, next_backward++});
        ops.push_back({StageOp::forward, next_forward++});
    }
    while (next_backward < micro_batches) ops.push_back({StageOp::backward, next_backward++});
    return ops;
}

int micro_batches_in_flight(PipelineSchedule schedule, int stages, int stage, int micro_batches) {
    TANDEM_CHECK_AS(ConfigError, micro_batches >= 1 && stages >= 1 && stage >= 0 && stage < stages)
        << "micro_batches_in_flight: need micro_batches >= 1 and 0 <= stage < stages, got "
        << micro_batches << " micro-batches, stage " << stage << " of " << stages;
    if (schedule == PipelineSchedule::gpipe) return micro_batches;
    return std::min(micro_batches, stages - stage);
}

}  // namespace tandem

#include "parallel/schedule.h"

#include <algorithm>

#include "base/enum_names.h"
#include "base/error.h"

namespace tandem {

namespace {
constexpr std::array<EnumName<PipelineSchedule>, 2> kPipelineSchedules{
    {{PipelineSchedule::gpipe, "gpipe"}, {PipelineSchedule::one_f_one_b, "1f1b"}}};
}  // namespace

std::string_view pipeline_schedule_name(PipelineSchedule schedule) {
    return enum_name(kPipelineSchedules, schedule);
}

PipelineSchedule parse_pipeline_schedule(std::string_view name) {
    return parse_enum(kPipelineSchedules, name, "unknown pipeline schedule");
}

std::vector<StageOp> stage_ops(PipelineSchedule schedule, int stages, int stage,
                               int micro_batches) {
    TANDEM_CHECK_AS(ConfigError, stages >= 1 && stage >= 0 && stage < stages && micro_batches >= 1)
        << "stage " << stage << " of " << stages << " with " << micro_batches
        << " micro-batches is not a pipeline";
    return stage_ops_at_depth(schedule, stages - 1 - stage, micro_batches);
}

// Why no stage graph deadlocks (issue 17). In a step, only receives wait: a send posts its
// tensor on the board and goes on. So it is enough to give every op a time T such that T
// grows along each stage's program and every receive comes strictly after its send; then
// nothing waits forever (of the ops waiting, the one of least T has its send at a smaller T,
// so that sender got past it: a contradiction). The ops of one forward or backward of a
// micro-batch (its receives, the layers, its sends) share their T, in program order.
//
// Let d(s) be stage s's depth, D the largest, h(s) = D - d(s). Every edge p -> s between
// stages has d(p) >= d(s) + 1 (a longest path), so h(p) < h(s). Forwards F_m, backwards B_k:
//   GPipe: T(F_m) = h + m,  T(B_k) = D + M + d + (M - 1 - k).
//     Program order: h + M - 1 <= D + M - 1 < D + M + d; the B_k grow as k falls.
//     Forward edge p -> s: h(p) + m < h(s) + m.  Gradient edge t -> s (s -> t forward):
//     d(t) < d(s), so T(B_k at t) < T(B_k at s).
//   1F1B, w = min(M, d + 1) warm-up forwards:
//     T(F_m) = h + m (m < w),  T(F_m) = D - d + 2m (m >= w, which needs w = d + 1),
//     T(B_k) = D + d + 1 + 2k.
//     Program order: the warm-up ends at h + w - 1 <= D < T(B_0); B_k, F_{k+w}, B_{k+1} are
//     D + d + 1 + 2k, D + d + 2 + 2k, D + d + 3 + 2k; the drain grows by 2.
//     Forward edge p -> s, micro-batch m: both warm-up, h(p) < h(s); p warm-up and s not,
//     h(p) + m <= D - d(s) - 1 + m < D - d(s) + 2m; p past warm-up and s not cannot be
//     (w(p) >= w(s)); both past it, d(p) > d(s). Gradient edge: d(t) < d(s) again.
//   Synchronised batch norm (a stage's micro-batches together): T = h for its forward part,
//     D + 1 + d for its backward part; the same inequalities hold. Evaluation runs GPipe's
//     forwards alone.
// For a chain, d = S - 1 - s and w = min(M, S - s): the schedule as it always was.
std::vector<StageOp> stage_ops_at_depth(PipelineSchedule schedule, int depth, int micro_batches) {
    TANDEM_CHECK_AS(ConfigError, depth >= 0 && micro_batches >= 1)
        << "a stage at depth " << depth << " with " << micro_batches
        << " micro-batches is not a pipeline";
    std::vector<StageOp> ops;
    ops.reserve(2 * static_cast<std::size_t>(micro_batches));
    if (schedule == PipelineSchedule::gpipe) {
        for (int m = 0; m < micro_batches; ++m) ops.push_back({StageOp::forward, m});
        for (int m = micro_batches; m-- > 0;) ops.push_back({StageOp::backward, m});
        return ops;
    }
    const int warmup = micro_batches_in_flight_at_depth(schedule, depth, micro_batches);
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
    return micro_batches_in_flight_at_depth(schedule, stages - 1 - stage, micro_batches);
}

int micro_batches_in_flight_at_depth(PipelineSchedule schedule, int depth, int micro_batches) {
    TANDEM_CHECK_AS(ConfigError, micro_batches >= 1 && depth >= 0)
        << "micro_batches_in_flight: need micro_batches >= 1 and a depth >= 0, got "
        << micro_batches << " micro-batches, depth " << depth;
    if (schedule == PipelineSchedule::gpipe) return micro_batches;
    return std::min(micro_batches, depth + 1);
}

}  // namespace tandem

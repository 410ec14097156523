// Pipeline schedules: the order in which one stage runs the forward and backward passes of a
// step's micro-batches.
//
// GPipe (fill-drain): every forward, then every backward (last micro-batch first); a stage
// holds the activations of all M micro-batches at once.
// 1F1B: stage s (of S) runs min(M, S - s) forwards to fill the pipe, then alternates one
// backward and one forward, then drains the remaining backwards in order; a stage holds at
// most S - s micro-batches' activations, and the first micro-batch's gradient comes back
// earlier. Both give the same gradients: only the order of work differs.
//
// A stage graph (stage_graph.h) orders each stage by its depth, the longest path from it to the
// stage computing the loss (a chain's stage s: S - 1 - s): 1F1B fills with min(M, depth + 1)
// forwards. schedule.cpp proves that no stage graph deadlocks under either schedule.
#pragma once

#include <string_view>
#include <vector>

namespace tandem {

enum class PipelineSchedule { gpipe, one_f_one_b };

std::string_view pipeline_schedule_name(PipelineSchedule schedule);
// "gpipe" or "1f1b"; ConfigError naming the choices otherwise.
PipelineSchedule parse_pipeline_schedule(std::string_view name);

struct StageOp {
    enum Kind { forward, backward } kind;
    int micro_batch;
    bool operator==(const StageOp&) const = default;
};

// The ops stage `stage` of a chain of `stages` runs for `micro_batches` micro-batches, in order.
std::vector<StageOp> stage_ops(PipelineSchedule schedule, int stages, int stage, int micro_batches);
// The same for a stage at `depth` (stage_depths in stage_graph.h) of a stage graph.
std::vector<StageOp> stage_ops_at_depth(PipelineSchedule schedule, int depth, int micro_batches);

// The most micro-batches whose activations `stage` holds at once under `schedule`.
int micro_batches_in_flight(PipelineSchedule schedule, int stages, int stage, int micro_batches);
int micro_batches_in_flight_at_depth(PipelineSchedule schedule, int depth, int micro_batches);

}  // namespace tandem

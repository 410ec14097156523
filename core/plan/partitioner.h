// Partitioner: where to cut a net's top-level layers into S pipeline stages.
//
// Automatic (`split = 'auto'`): best_partition() picks the cuts that minimise the slowest
// stage's time (see stage_cost.h for a stage's time and memory under a schedule) subject to
// every stage fitting its device's memory cap and holding at least one layer. It is exact:
// a dynamic programme over prefix sums, O(S L^2) for L layers, not a greedy sweep.
//
// Ties: among the splits with the smallest slowest stage, it takes the one with the smallest
// sum of squared stage times (the other stages as balanced as they can be, so less idle time
// waiting on the bottleneck), and among those the lexicographically earliest cuts. Times are
// compared exactly, as computed, so the choice is deterministic for a given cost table.
//
// Manual (`split = {'conv3', 'fc1'}` or `{5, 11}`): parse_cuts() turns layer names (cut after
// that layer) or 1-based layer indices (cut after layer i, as Lua counts) into cut points.
//
// Cut points: S - 1 increasing indices in [1, L - 1]; stage k holds layers [cut_{k-1}, cut_k)
// with cut_{-1} = 0 and cut_{S-1} = L.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "plan/stage_cost.h"

namespace tandem {

struct PartitionOptions {
    int stages = 1;
    // Memory cap of each stage's device in bytes: S entries, or one for all stages.
    std::vector<std::size_t> caps;
    PipelineSchedule schedule = PipelineSchedule::gpipe;
    int micro_batches = 1;
    // Whether each stage recomputes its activations: S entries, one for all, or none (no stage).
    std::vector<bool> recompute;
    // Where a stage may begin: entry i for layer i (entry 0 unused); empty: at any layer. The
    // planner keeps cuts out of opened graphs and blocks this way to weigh the split between
    // them against the finer one.
    std::vector<bool> cut_allowed;
};

struct StagePlan {
    std::size_t begin = 0, end = 0;  // layers [begin, end)
    double time_ms = 0;              // forward + backward (+ recomputed forward) per micro-batch
    StageMemory memory;
    std::size_t cap = 0;
    int in_flight = 0;  // micro-batches whose activations it holds at once
    bool recompute = false;

    bool fits() const { return memory.total() <= cap; }
};

struct Partition {
    std::vector<std::size_t> cuts;
    std::vector<StagePlan> stages;
    std::size_t slowest = 0;  // index of the slowest stage (the first, on a tie)
    PipelineSchedule schedule = PipelineSchedule::gpipe;
    int micro_batches = 1;

    double slowest_ms() const { return stages.empty() ? 0 : stages[slowest].time_ms; }
    bool fits() const;
};

// The best split (see above). Throws ConfigError on bad options (fewer layers than stages,
// caps or recompute flags of the wrong count) and when no split fits the caps: the message
// gives, for the split that comes closest, each stage's memory against its cap, and what
// would help (more stages, more micro-batches, 1F1B, recomputation).
Partition best_partition(const std::vector<LayerCost>& costs, const PartitionOptions& options);

// The time and memory of a given split, manual or automatic; does not require it to fit
// (Partition::fits and StagePlan::fits say whether it does). Throws ConfigError on invalid cuts.
Partition evaluate_partition(const std::vector<LayerCost>& costs,
                             const std::vector<std::size_t>& cuts, const PartitionOptions& options);

// One manual cut: a 1-based layer index or a top-level layer name; the cut goes after it.
using CutSpec = std::variant<std::int64_t, std::string>;

// Cut points from manual specs, checked: S - 1 of them, each naming a known layer or an index
// in [1, L - 1], strictly increasing. Throws ConfigError saying which spec is wrong and why
// (an unknown name lists the known ones).
std::vector<std::size_t> parse_cuts(const std::vector<CutSpec>& specs,
                                    const std::vector<std::string>& layer_names, int stages);

// A text table: per stage its layers (first..last), time, memory (weights, gradients,
// optimizer state, activations, total against the cap) and the bytes it sends to the next
// stage; the slowest stage is marked with '*'.
std::string format_partition(const Partition& partition, const std::vector<LayerCost>& costs);

}  // namespace tandem

#include "plan/partitioner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <sstream>

#include "base/error.h"
#include "base/format.h"

namespace tandem {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// "1 stage", "3 stages", "2 micro-batches".
std::string count(std::size_t n, std::string_view one, std::string_view many) {
    return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// The options resolved per stage: cap, recompute flag and micro-batches in flight.
struct StageSetting {
    std::size_t cap = 0;
    bool recompute = false;
    int in_flight = 1;
};

std::vector<StageSetting> settings(std::size_t layers, const PartitionOptions& o) {
    TANDEM_CHECK_AS(ConfigError, o.stages >= 1)
        << "partition: stages must be at least 1, got " << o.stages;
    TANDEM_CHECK_AS(ConfigError, o.micro_batches >= 1)
        << "partition: micro_batches must be at least 1, got " << o.micro_batches;
    const auto s_count = static_cast<std::size_t>(o.stages);
    TANDEM_CHECK_AS(ConfigError, layers >= s_count)
        << "cannot split a net of " << layers << " top-level layers into " << o.stages
        << " stages: every stage needs at least one layer";
    TANDEM_CHECK_AS(ConfigError, o.caps.size() == 1 || o.caps.size() == s_count)
        << "partition: " << o.caps.size() << " memory caps for " << o.stages
        << " stages (give one per stage, or one for all)";
    TANDEM_CHECK_AS(ConfigError, o.recompute.size() <= 1 || o.recompute.size() == s_count)
        << "partition: " << o.recompute.size() << " recompute flags for " << o.stages
        << " stages (give one per stage, one for all, or none)";
    std::vector<StageSetting> out(s_count);
    for (std::size_t s = 0; s < s_count; ++s) {
        out[s].cap = o.caps.size() == 1 ? o.caps[0] : o.caps[s];
        out[s].recompute = o.recompute.empty()       ? false
                           : o.recompute.size() == 1 ? o.recompute[0]
                                                     : o.recompute[s];
        out[s].in_flight =
            micro_batches_in_flight(o.schedule, o.stages, static_cast<int>(s), o.micro_batches);
    }
    return out;
}

// Runs the min-max dynamic programme over "stage s ends at layer j" with `cost` giving the
// price of stage s = layers [i, j) (kInf when not allowed). Returns, per (s, j), the best
// bottleneck value of stages 0..s covering layers [0, j).
template <class Cost>
std::vector<std::vector<double>> minmax_table(std::size_t L, std::size_t S, Cost cost) {
    std::vector<std::vector<double>> best(S, std::vector<double>(L + 1, kInf));
    for (std::size_t s = 0; s < S; ++s) {
        // Stage s ends at j in [s + 1, L - (S - 1 - s)] so that every stage keeps a layer.
        for (std::size_t j = s + 1; j + (S - 1 - s) <= L; ++j) {
            if (s == 0) {
                best[0][j] = cost(0, 0, j);
                continue;
            }
            double b = kInf;
            for (std::size_t i = s; i < j; ++i) {
                if (best[s - 1][i] == kInf) continue;
                b = std::min(b, std::max(best[s - 1][i], cost(s, i, j)));
            }
            best[s][j] = b;
        }
    }
    return best;
}

// Lexicographically earliest cuts minimising the sum of squared stage times among splits
// whose stages all cost at most `bound` (kInf: not allowed).
template <class Cost>
std::vector<std::size_t> balanced_cuts(std::size_t L, std::size_t S, double bound, Cost cost) {
    // rest[s][i]: the least sum of squares of stages s..S-1 covering layers [i, L);
    // next[s][i]: the earliest end of stage s that achieves it.
    std::vector<std::vector<double>> rest(S + 1, std::vector<double>(L + 1, kInf));
    std::vector<std::vector<std::size_t>> next(S, std::vector<std::size_t>(L + 1, 0));
    rest[S][L] = 0;
    for (std::size_t s = S; s-- > 0;) {
        for (std::size_t i = s; i + (S - s) <= L; ++i) {
            for (std::size_t j = i + 1; j + (S - 1 - s) <= L; ++j) {
                if (rest[s + 1][j] == kInf) continue;
                const double t = cost(s, i, j);
                if (t > bound) continue;
                const double v = t * t + rest[s + 1][j];
                if (v < rest[s][i]) {  // strict: the earliest j wins a tie
                    rest[s][i] = v;
                    next[s][i] = j;
                }
            }
        }
    }
    TANDEM_CHECK(rest[0][0] != kInf) << "partition: no split within the bound it was computed from";
    std::vector<std::size_t> cuts;
    std::size_t i = 0;
    for (std::size_t s = 0; s + 1 < S; ++s) {
        i = next[s][i];
        cuts.push_back(i);
    }
    return cuts;
}

std::string stage_layers(const std::vector<LayerCost>& costs, const StagePlan& st) {
    const std::string& first = costs[st.begin].name;
    return st.end - st.begin == 1 ? first : first + ".." + costs[st.end - 1].name;
}

std::string memory_report(const Partition& p, const std::vector<LayerCost>& costs) {
    std::ostringstream out;
    for (std::size_t s = 0; s < p.stages.size(); ++s) {
        const StagePlan& st = p.stages[s];
        out << "\n  stage " << s + 1 << " (" << stage_layers(costs, st) << "): needs "
            << format_bytes(double(st.memory.total())) << " of a " << format_bytes(double(st.cap))
            << " cap (weights+gradients+optimizer "
            << format_bytes(double(st.memory.weights + st.memory.gradients + st.memory.optimizer))
            << ", activations " << format_bytes(double(st.memory.activations)) << " for "
            << count(std::size_t(st.in_flight), "micro-batch", "micro-batches") << " in flight"
            << (st.recompute ? ", recomputed" : "") << ")" << (st.fits() ? "" : " - over");
    }
    return out.str();
}

[[noreturn]] void throw_infeasible(const std::vector<LayerCost>& costs, const PartitionOptions& o,
                                   const std::vector<StageSetting>& set, const StageCosts& sc) {
    const std::size_t L = costs.size(), S = set.size();
    // The split that comes closest: the least worst ratio of memory to cap.
    auto ratio = [&](std::size_t s, std::size_t i, std::size_t j) {
        const double need = double(sc.memory(i, j, set[s].in_flight, set[s].recompute).total());
        return set[s].cap == 0 ? kInf : need / double(set[s].cap);
    };
    const double worst = minmax_table(L, S, ratio)[S - 1][L];
    std::vector<std::size_t> cuts;
    if (worst != kInf)
        cuts = balanced_cuts(L, S, worst, ratio);
    else
        for (std::size_t s = 1; s < S; ++s) cuts.push_back(s);  // a zero cap: any split shows it
    const Partition closest = evaluate_partition(costs, cuts, o);

    std::vector<std::string> after;
    for (std::size_t c : cuts) after.push_back("'" + costs[c - 1].name + "'");
    std::ostringstream hint;
    hint << "more stages";
    // Under GPipe a stage holds the whole batch's activations however it is cut into
    // micro-batches; under 1F1B at most S - s of them, so smaller micro-batches then help.
    if (std::any_of(closest.stages.begin(), closest.stages.end(),
                    [](const StagePlan& st) { return st.memory.activations > 0; }))
        hint << (o.schedule == PipelineSchedule::gpipe
                     ? ", the 1f1b schedule with more, smaller micro-batches"
                     : ", more, smaller micro-batches");
    if (std::any_of(set.begin(), set.end(), [](const StageSetting& st) { return !st.recompute; }))
        hint << ", activation recomputation";
    hint << " or devices with more memory";

    TANDEM_THROW(ConfigError) << "no split of " << count(L, "layer", "layers") << " into "
                              << count(S, "stage", "stages") << " fits the devices' memory ("
                              << pipeline_schedule_name(o.schedule) << ", "
                              << count(std::size_t(o.micro_batches), "micro-batch", "micro-batches")
                              << "); the split needing the least"
                              << (S > 1 ? " (cut after " + join(after, ", ") + ")" : std::string())
                              << ":" << memory_report(closest, costs) << "\ntry " << hint.str();
    std::abort();  // not reached: TANDEM_THROW throws
}

}  // namespace

bool Partition::fits() const {
    return std::all_of(stages.begin(), stages.end(), [](const StagePlan& s) { return s.fits(); });
}

Partition evaluate_partition(const std::vector<LayerCost>& costs,
                             const std::vector<std::size_t>& cuts,
                             const PartitionOptions& options) {
    const auto set = settings(costs.size(), options);
    TANDEM_CHECK_AS(ConfigError, cuts.size() + 1 == set.size())
        << "partition: " << cuts.size() << " cuts for " << options.stages << " stages (need "
        << options.stages - 1 << ")";
    const StageCosts sc(costs);
    Partition p;
    p.cuts = cuts;
    p.schedule = options.schedule;
    p.micro_batches = options.micro_batches;
    std::size_t begin = 0;
    for (std::size_t s = 0; s < set.size(); ++s) {
        const std::size_t end = s < cuts.size() ? cuts[s] : costs.size();
        TANDEM_CHECK_AS(ConfigError, end > begin && end <= costs.size())
            << "partition: cut " << end << " leaves stage " << s + 1 << " empty or past the "
            << costs.size() << " layers (cuts must increase within [1, " << costs.size() - 1
            << "])";
        StagePlan st;
        st.begin = begin;
        st.end = end;
        st.cap = set[s].cap;
        st.in_flight = set[s].in_flight;
        st.recompute = set[s].recompute;
        st.time_ms = sc.time_ms(begin, end, st.recompute);
        st.memory = sc.memory(begin, end, st.in_flight, st.recompute);
        if (st.time_ms > (p.stages.empty() ? -1.0 : p.stages[p.slowest].time_ms)) p.slowest = s;
        p.stages.push_back(st);
        begin = end;
    }
    return p;
}

Partition best_partition(const std::vector<LayerCost>& costs, const PartitionOptions& options) {
    const auto set = settings(costs.size(), options);
    const StageCosts sc(costs);
    const std::size_t L = costs.size(), S = set.size();
    // Stage s as layers [i, j): its time when it fits its device, else not allowed.
    auto stage_time = [&](std::size_t s, std::size_t i, std::size_t j) {
        if (i > 0 && !options.cut_allowed.empty() && !options.cut_allowed.at(i)) return kInf;
        if (sc.memory(i, j, set[s].in_flight, set[s].recompute).total() > set[s].cap) return kInf;
        return sc.time_ms(i, j, set[s].recompute);
    };
    const double bottleneck = minmax_table(L, S, stage_time)[S - 1][L];
    if (bottleneck == kInf) throw_infeasible(costs, options, set, sc);
    return evaluate_partition(costs, balanced_cuts(L, S, bottleneck, stage_time), options);
}

std::vector<std::size_t> parse_cuts(const std::vector<CutSpec>& specs,
                                    const std::vector<std::string>& layer_names, int stages) {
    const std::size_t L = layer_names.size();
    TANDEM_CHECK_AS(ConfigError, stages >= 1) << "split: stages must be at least 1, got " << stages;
    TANDEM_CHECK_AS(ConfigError, specs.size() + 1 == static_cast<std::size_t>(stages))
        << "split: " << specs.size() << " cut" << (specs.size() == 1 ? "" : "s") << " for "
        << stages << " stages (need " << stages - 1 << ": a cut between each pair of stages)";
    std::vector<std::size_t> cuts;
    std::string previous;
    for (std::size_t k = 0; k < specs.size(); ++k) {
        std::size_t cut = 0;
        std::string what;
        if (const auto* index = std::get_if<std::int64_t>(&specs[k])) {
            what = "index " + std::to_string(*index);
            TANDEM_CHECK_AS(ConfigError, *index >= 1 && static_cast<std::size_t>(*index) < L)
                << "split: cut " << k + 1 << ": index " << *index << " is out of range (cut after "
                << "layer 1.." << (L == 0 ? 0 : L - 1) << " of the net's " << L << " layers)";
            cut = static_cast<std::size_t>(*index);
        } else {
            const std::string& name = std::get<std::string>(specs[k]);
            what = "'" + name + "'";
            const auto it = std::find(layer_names.begin(), layer_names.end(), name);
            TANDEM_CHECK_AS(ConfigError, it != layer_names.end())
                << "split: cut " << k + 1 << ": unknown layer '" << name
                << "' (top-level layers: " << join(layer_names, ", ") << ")";
            cut = static_cast<std::size_t>(it - layer_names.begin()) + 1;
            TANDEM_CHECK_AS(ConfigError, cut < L)
                << "split: cut " << k + 1 << ": '" << name
                << "' is the last layer; a cut after it would leave the last stage empty";
        }
        TANDEM_CHECK_AS(ConfigError, cuts.empty() || cut > cuts.back())
            << "split: cuts must increase, but cut " << k + 1 << " (" << what << ", after layer "
            << cut << ") is not after cut " << k << " (" << previous << ", after layer "
            << cuts.back() << ")";
        cuts.push_back(cut);
        previous = what;
    }
    return cuts;
}

std::string format_partition(const Partition& p, const std::vector<LayerCost>& costs) {
    std::ostringstream out;
    out << "partition of " << count(costs.size(), "layer", "layers") << " into "
        << count(p.stages.size(), "stage", "stages") << " (" << pipeline_schedule_name(p.schedule)
        << ", " << count(std::size_t(p.micro_batches), "micro-batch", "micro-batches")
        << "; time per micro-batch, activations for the micro-batches in flight)\n";
    std::size_t layers_width = 6;
    for (const StagePlan& st : p.stages)
        layers_width = std::max(layers_width, stage_layers(costs, st).size());
    // One row: left-aligned stage and layers, right-aligned numbers.
    auto row = [&](const std::string& stage, const std::string& layers, const std::string& time,
                   const std::string& weights, const std::string& grads, const std::string& optim,
                   const std::string& acts, const std::string& flight, const std::string& total,
                   const std::string& sends) {
        out << std::left << std::setw(6) << stage << ' ' << std::setw(int(layers_width)) << layers
            << std::right << ' ' << std::setw(9) << time << ' ' << std::setw(10) << weights << ' '
            << std::setw(10) << grads << ' ' << std::setw(10) << optim << ' ' << std::setw(11)
            << acts << ' ' << std::setw(9) << flight << ' ' << std::setw(23) << total << ' '
            << std::setw(10) << sends;
    };
    row("stage", "layers", "time ms", "weights", "grads", "optim", "activations", "in flight",
        "total / cap", "sends");
    for (std::size_t s = 0; s < p.stages.size(); ++s) {
        const StagePlan& st = p.stages[s];
        char time[32];
        std::snprintf(time, sizeof time, "%.3f", st.time_ms);
        out << '\n';
        row(std::to_string(s + 1) + (s == p.slowest ? " *" : ""), stage_layers(costs, st), time,
            format_bytes(double(st.memory.weights)), format_bytes(double(st.memory.gradients)),
            format_bytes(double(st.memory.optimizer)), format_bytes(double(st.memory.activations)),
            std::to_string(st.in_flight) + (st.recompute ? " recomp" : ""),
            format_bytes(double(st.memory.total())) + " / " + format_bytes(double(st.cap)),
            s + 1 < p.stages.size() ? format_bytes(double(costs[st.end - 1].output_bytes)) : "-");
        if (!st.fits()) out << "  over cap";
    }
    char slowest[32];
    std::snprintf(slowest, sizeof slowest, "%.3f", p.slowest_ms());
    out << "\n* slowest stage: " << p.slowest + 1 << ", " << slowest << " ms per micro-batch";
    return out.str();
}

}  // namespace tandem

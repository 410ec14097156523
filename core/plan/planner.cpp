#include "plan/planner.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>
#include <tuple>

#include "base/error.h"
#include "base/format.h"

namespace tandem {
namespace {

std::vector<int> device_order(const std::string& kind, int groups, int stages) {
    std::vector<int> devices(static_cast<std::size_t>(groups * stages));
    for (int g = 0; g < groups; ++g)
        for (int s = 0; s < stages; ++s)
            devices[static_cast<std::size_t>(g * stages + s)] =
                kind == "spread" ? s * groups + g : g * stages + s;
    return devices;
}

// The share of the step with more busy threads than cores from which a plan counts as crowded
// (simulated: 0-6% of the step for smallbn's four-device layouts that keep to two busy workers,
// 44-95% for the others).
constexpr double kCrowdedShare = 0.25;

// What the cost model misjudges most in a layout, in the order it misjudges it: crowding (the
// kernel's scheduler shares the cores out: 5-15% optimistic on this repository's 2-core
// machine, where no layout of no more devices than cores was off by more than 10%), the stages
// (a pipeline's bubbles and copies), the micro-batches (each one's fixed costs) and
// recomputation.
std::tuple<bool, int, int, bool> complexity(const RankedPlan& r) {
    const Plan& p = r.plan;
    const bool crowded = r.simulation.crowded_ms > 0 &&
                         r.simulation.crowded_ms >= kCrowdedShare * r.simulation.step_ms;
    return {crowded, p.stages, p.micro_batches, p.recompute};
}

// Why `simpler` ranks above `faster`: the first part of complexity() in which it is simpler.
std::string simpler_because(const RankedPlan& simpler, const RankedPlan& faster) {
    const auto a = complexity(simpler), b = complexity(faster);
    if (std::get<0>(a) != std::get<0>(b))
        return "keeps its busy threads within the cores for more of the step";
    if (std::get<1>(a) != std::get<1>(b)) return "fewer stages";
    if (std::get<2>(a) != std::get<2>(b)) return "fewer micro-batches";
    return "no recomputation";
}

std::string fixed(double value, int decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

// Where a stage may begin so that no cut falls inside an opened graph or block.
std::vector<bool> cuts_between_layers(const std::vector<std::string>& owners) {
    std::vector<bool> allowed(owners.size(), true);
    for (std::size_t i = 1; i < owners.size(); ++i)
        allowed[i] = owners[i].empty() || owners[i] != owners[i - 1];
    return allowed;
}

// `plan` cut by the partitioner and simulated; nullopt when no split fits. For a net of opened
// layers, both the best split between top-level layers and the best one anywhere: the
// partitioner weighs compute alone, and a cut inside a block sends two tensors (the skip and
// the body's) where one between blocks sends one, so the simulation chooses.
std::optional<RankedPlan> cut_and_simulate(const Plan& plan, PartitionOptions po,
                                           const std::vector<LayerCost>& table,
                                           const Topology& topology, const CostModel& costs,
                                           const PlannerOptions& o) {
    std::vector<std::vector<bool>> restrictions{{}};
    if (!o.unit_owners.empty() && plan.stages > 1)
        restrictions.insert(restrictions.begin(), cuts_between_layers(o.unit_owners));
    std::optional<RankedPlan> best;
    for (const auto& allowed : restrictions) {
        po.cut_allowed = allowed;
        RankedPlan ranked;
        try {
            ranked.partition = best_partition(table, po);
        } catch (const ConfigError&) {
            continue;
        }
        ranked.plan = plan;
        if (o.stage_graph)
            ranked.plan.graph = o.stage_graph(ranked.partition.cuts, plan.micro_batch());
        else
            ranked.plan.cuts = ranked.partition.cuts;
        ranked.simulation = simulate(ranked.plan, topology, costs);
        if (!ranked.simulation.fits()) continue;
        if (!best || ranked.simulation.step_ms < best->simulation.step_ms) best = std::move(ranked);
    }
    return best;
}

// The fastest predicted of the plans that `is`; null when none is.
template <class Is>
const RankedPlan* fastest_of(const std::vector<RankedPlan>& plans, Is is) {
    const RankedPlan* best = nullptr;
    for (const auto& p : plans)
        if (is(p.plan) && (!best || p.simulation.images_per_s > best->simulation.images_per_s))
            best = &p;
    return best;
}

}  // namespace

const RankedPlan* PlanSearch::pure_data_parallel() const {
    return fastest_of(plans, [](const Plan& p) { return p.stages == 1 && p.groups > 1; });
}

const RankedPlan* PlanSearch::pure_pipeline() const {
    return fastest_of(plans, [](const Plan& p) {
        return p.groups == 1 && p.stages > 1 && p.schedule == PipelineSchedule::gpipe;
    });
}

PlanSearch search_plans(const Topology& topology, const CostModel& costs, const PlannerOptions& o) {
    const int n = o.devices > 0 ? o.devices : topology.device_count();
    TANDEM_CHECK_AS(ConfigError, n <= topology.device_count())
        << "cannot plan for " << n << " devices: topology '" << topology.name() << "' has "
        << topology.device_count();
    TANDEM_CHECK_AS(ConfigError, o.batch >= 1) << "planning needs a batch size, got " << o.batch;
    TANDEM_CHECK_AS(ConfigError, o.devices >= 0)
        << "planning: devices must be a count (0 for all), got " << o.devices;
    TANDEM_CHECK_AS(ConfigError, !o.micro_batches.empty())
        << "planning: micro_batches must list at least one count";
    for (const int m : o.micro_batches)
        TANDEM_CHECK_AS(ConfigError, m >= 1)
            << "planning: option 'micro_batches' must list positive counts, got " << m;
    PlanSearch search;
    const TopologyDevice& first = topology.device(0);
    // Every micro-batch size the layouts below ask for, measured together (prefetch). A layout
    // of one stage tries the first count listed, and the next ones only when it did not fit
    // (below): they are measured only then.
    std::vector<std::int64_t> sizes{1};
    for (int groups = 1; groups <= n; ++groups)
        if (n % groups == 0 && o.batch % groups == 0)
            for (int micro_batches : o.micro_batches)
                if ((o.batch / groups) % micro_batches == 0 &&
                    (groups < n || micro_batches == o.micro_batches.front()))
                    sizes.push_back(o.batch / groups / micro_batches);
    costs.prefetch(first, sizes);
    for (const auto& c : costs.layer_costs(first, 1)) search.layer_names.push_back(c.name);
    search.unit_owners = o.unit_owners;
    TANDEM_CHECK(search.unit_owners.empty() ||
                 search.unit_owners.size() == search.layer_names.size())
        << search.unit_owners.size() << " unit owners for " << search.layer_names.size()
        << " units";
    const std::size_t layers = search.layer_names.size();

    for (int stages = 1; stages <= n; ++stages) {
        if (n % stages != 0 || static_cast<std::size_t>(stages) > layers) continue;
        const int groups = n / stages;
        if (o.batch % groups != 0) continue;
        const std::vector<PipelineSchedule> schedules =
            stages == 1 ? std::vector{PipelineSchedule::gpipe}
                        : std::vector{PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b};
        // On a flat topology every device order is the same.
        const std::vector<std::string> orders = groups > 1 && stages > 1 && !topology.flat()
                                                    ? std::vector<std::string>{"packed", "spread"}
                                                    : std::vector<std::string>{"packed"};
        for (const auto schedule : schedules) {
            for (int micro_batches : o.micro_batches) {
                if ((o.batch / groups) % micro_batches != 0) continue;
                // With one micro-batch both schedules are the same.
                if (micro_batches == 1 && schedule == PipelineSchedule::one_f_one_b) continue;
                // One stage gains nothing from micro-batches but memory: more only when fewer did
                // not fit.
                if (stages == 1 && micro_batches > 1 && !search.plans.empty() &&
                    search.plans.back().plan.stages == 1 &&
                    search.plans.back().plan.groups == groups)
                    continue;
                for (const auto& place : orders) {
                    ++search.considered;
                    bool placed = false;
                    for (bool recompute : {false, true}) {
                        Plan plan;
                        plan.groups = groups, plan.stages = stages,
                        plan.micro_batches = micro_batches;
                        plan.schedule = schedule, plan.recompute = recompute;
                        plan.batch = o.batch, plan.algorithm = o.algorithm,
                        plan.bucket_bytes = o.bucket_bytes;
                        plan.overlap_backward = o.overlap_backward;
                        plan.parameter_server = o.parameter_server;
                        plan.nccl_auto = o.nccl_auto;
                        plan.devices = device_order(place, groups, stages);
                        plan.device_order = place;
                        // Cut for the devices of group 0; each stage's cap is the smallest among
                        // its replicas.
                        PartitionOptions po;
                        po.stages = stages, po.schedule = schedule,
                        po.micro_batches = micro_batches;
                        po.recompute = {recompute};
                        for (int s = 0; s < stages; ++s) {
                            std::size_t cap = SIZE_MAX;
                            for (int g = 0; g < groups; ++g)
                                cap = std::min(
                                    cap,
                                    topology
                                        .device(
                                            plan.devices[static_cast<std::size_t>(g * stages + s)])
                                        .usable_bytes());
                            po.caps.push_back(cap);
                        }
                        const auto table =
                            costs.layer_costs(topology.device(plan.devices[0]), plan.micro_batch());
                        std::optional<RankedPlan> best =
                            cut_and_simulate(plan, po, table, topology, costs, o);
                        if (!best) continue;  // no split fits: try recomputation
                        RankedPlan ranked = std::move(*best);
                        ranked.topology = topology.name();
                        ranked.threads = first.cpu ? first.threads : 0;
                        ranked.model = first.model;
                        ranked.cores =
                            first.cpu && first.pool >= 0
                                ? topology.pools().at(static_cast<std::size_t>(first.pool))
                                : 0;
                        search.plans.push_back(std::move(ranked));
                        placed = true;
                        break;
                    }
                    if (!placed) ++search.over_memory;
                }
            }
        }
    }
    search.simpler_within = o.simpler_within;
    rank_plans(search.plans, search.simpler_within);
    return search;
}

void rank_plans(std::vector<RankedPlan>& plans, double simpler_within) {
    std::stable_sort(plans.begin(), plans.end(), [](const RankedPlan& a, const RankedPlan& b) {
        if (a.simulation.images_per_s != b.simulation.images_per_s)
            return a.simulation.images_per_s > b.simulation.images_per_s;
        return a.simulation.peak_bytes() < b.simulation.peak_bytes();
    });
    std::vector<RankedPlan> ordered;
    ordered.reserve(plans.size());
    while (!plans.empty()) {
        const double floor = plans.front().simulation.images_per_s * (1 - simpler_within);
        std::size_t pick = 0;
        for (std::size_t i = 1; i < plans.size() && plans[i].simulation.images_per_s >= floor; ++i)
            if (complexity(plans[i]) < complexity(plans[pick])) pick = i;
        ordered.push_back(std::move(plans[pick]));
        plans.erase(plans.begin() + static_cast<std::ptrdiff_t>(pick));
    }
    plans = std::move(ordered);
}

bool PlanSearch::cuts_inside(const RankedPlan& r) const {
    if (unit_owners.empty()) return false;
    const std::vector<bool> between = cuts_between_layers(unit_owners);
    for (std::size_t c : r.partition.cuts)
        if (!between[c]) return true;
    return false;
}

std::vector<std::string> PlanSearch::split_names(const RankedPlan& r) const {
    std::vector<std::string> names;
    for (std::size_t c : r.partition.cuts) {
        const bool part = !unit_owners.empty() && !unit_owners[c - 1].empty();
        names.push_back(part ? unit_owners[c - 1] : layer_names.at(c - 1));
    }
    return names;
}

std::vector<std::vector<std::string>> PlanSearch::stage_names(const RankedPlan& r) const {
    std::vector<UnitRange> ranges;
    for (const StagePlan& stage : r.partition.stages) ranges.emplace_back(stage.begin, stage.end);
    return compact_stage_names(
        layer_names,
        unit_owners.empty() ? std::vector<std::string>(layer_names.size()) : unit_owners, ranges);
}

void merge_plans(PlanSearch& into, PlanSearch other) {
    into.considered += other.considered;
    into.over_memory += other.over_memory;
    if (into.layer_names.empty()) into.layer_names = other.layer_names;
    if (into.unit_owners.empty()) into.unit_owners = other.unit_owners;
    into.simpler_within = other.simpler_within;
    for (auto& p : other.plans) into.plans.push_back(std::move(p));
    rank_plans(into.plans, into.simpler_within);
}

std::string format_plans(const PlanSearch& search, std::size_t top) {
    std::ostringstream out;
    const RankedPlan* dp = search.pure_data_parallel();
    const double dp_rate = dp ? dp->simulation.images_per_s : 0;
    // crowded: the share of the step with more busy threads than cores (CPU devices; the
    // ranking takes kCrowdedShare or more as complex, complexity()).
    out << "  #  plan (G x S x M)         order      devices   step ms   images/s  bubble  exposed "
           "comm  peak memory    vs data parallel  crowded\n";
    auto row = [&](const std::string& rank, const RankedPlan& r) {
        const Simulation& s = r.simulation;
        std::string label = r.plan.label();
        label.resize(std::max<std::size_t>(label.size(), 24), ' ');
        std::string order = r.plan.device_order;
        order.resize(std::max<std::size_t>(order.size(), 9), ' ');
        std::string devices = std::to_string(r.plan.groups * r.plan.stages);
        if (r.threads > 0) devices += " x " + std::to_string(r.threads) + "t";
        devices.resize(std::max<std::size_t>(devices.size(), 8), ' ');
        std::string versus =
            dp_rate > 0 ? fixed(100 * (s.images_per_s / dp_rate - 1), 1) + "%" : "-";
        versus.resize(std::max<std::size_t>(versus.size(), 16), ' ');
        const std::string crowded =
            r.threads > 0 && s.step_ms > 0 ? fixed(100 * s.crowded_ms / s.step_ms, 0) + "%" : "-";
        char line[256];
        std::snprintf(line, sizeof line,
                      "%3s  %s  %s  %s  %8.2f  %9.1f  %5.1f%%  %9.2f ms  %11s    %s  %7s\n",
                      rank.c_str(), label.c_str(), order.c_str(), devices.c_str(), s.step_ms,
                      s.images_per_s, 100 * s.bubble, s.exposed_comm_ms,
                      format_bytes(double(s.peak_bytes())).c_str(), versus.c_str(),
                      crowded.c_str());
        out << line;
    };
    for (std::size_t i = 0; i < std::min(top, search.plans.size()); ++i)
        row(std::to_string(i + 1), search.plans[i]);
    auto reference = [&](const RankedPlan* r, const char* what) {
        if (!r) {
            out << "     (" << what << ": no plan fits)\n";
            return;
        }
        const auto index = static_cast<std::size_t>(r - search.plans.data());
        if (index < top) return;
        row(std::to_string(index + 1), *r);
    };
    reference(dp, "pure data parallel");
    reference(search.pure_pipeline(), "pure pipeline");
    // Why the first is not the fastest predicted, when it is not.
    const RankedPlan* fastest = fastest_of(search.plans, [](const Plan&) { return true; });
    if (fastest && fastest->simulation.images_per_s > search.plans.front().simulation.images_per_s)
        out << "#1 is simpler than #" << (fastest - search.plans.data() + 1) << " ("
            << simpler_because(search.plans.front(), *fastest) << "), which is predicted "
            << fixed(100 * (fastest->simulation.images_per_s /
                                search.plans.front().simulation.images_per_s -
                            1),
                     1)
            << "% faster: less than simpler_within = " << fixed(100 * search.simpler_within, 0)
            << "% (0 ranks by prediction alone)\n";
    out << search.plans.size() << " plans ranked of " << search.considered << " layouts; "
        << search.over_memory << " did not fit any device's memory\n";
    return out.str();
}

std::string plan_to_lua(const RankedPlan& r, const PlanSearch& search) {
    const Plan& p = r.plan;
    std::ostringstream out;
    out << "-- Written by `tandem plan`: the first-ranked simulated layout on topology '"
        << r.topology << "' for a batch of " << p.batch
        << ".\n-- Use it with `tandem run RECIPE --plan=THIS_FILE`.\n";
    out << "return {\n";
    out << "  groups = " << p.groups << ", stages = " << p.stages
        << ", micro_batches = " << p.micro_batches << ",\n";
    out << "  pipeline = '" << pipeline_schedule_name(p.schedule)
        << "', recompute = " << (p.recompute ? "true" : "false") << ",\n";
    if (search.cuts_inside(r)) {
        // A graph's units: each stage's names, what parallel.placement takes.
        out << "  placement = {\n";
        for (const auto& stage : search.stage_names(r)) {
            out << "    {";
            for (std::size_t i = 0; i < stage.size(); ++i)
                out << (i ? ", " : "") << "'" << stage[i] << "'";
            out << "},\n";
        }
        out << "  },\n";
    } else {
        out << "  split = {";
        const auto names = search.split_names(r);
        for (std::size_t i = 0; i < names.size(); ++i)
            out << (i ? ", " : "") << "'" << names[i] << "'";
        out << "},\n";
    }
    out << "  device_order = '" << p.device_order << "', devices = {";
    for (std::size_t i = 0; i < p.devices.size(); ++i) out << (i ? ", " : "") << p.devices[i];
    out << "},\n";
    out << "  threads = " << r.threads << ", batch = " << p.batch << ", topology = '" << r.topology
        << "',\n";
    // What it was planned for, which `tandem run --plan=` checks against the devices it gets.
    out << "  device = '" << (r.model == "cpu" ? "cpu" : "cuda") << "', model = '" << r.model
        << "', cores = " << r.cores << ",\n";
    out << "  predicted_step_ms = " << fixed(r.simulation.step_ms, 3)
        << ", predicted_images_per_s = " << fixed(r.simulation.images_per_s, 1) << ",\n";
    out << "}\n";
    return out.str();
}

}  // namespace tandem

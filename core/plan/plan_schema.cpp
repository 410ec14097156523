#include "plan/plan_schema.h"

#include <cmath>

#include "base/error.h"
#include "parallel/communicator.h"
#include "parallel/schedule.h"
#include "plan/analytic_costs.h"
#include "plan/measurement_cache.h"
#include "plan/planner.h"
#include "plan/profiler.h"
#include "tensor/tensor.h"

namespace tandem {
namespace {

// A count beyond 2^20 (of profiled steps, micro-batches, a device's number) is a typo: a million
// steps of even a small net take hours, and no topology has a million devices.
constexpr double kMostCount = 1 << 20;
// A global batch beyond 2^40 samples is no batch a machine holds.
constexpr double kMostPlanBatch = 1099511627776.0;
// At most T.devices' count of devices, groups and stages (lua/bind_device.cpp).
constexpr double kMostPlanDevices = 256;
// The ranked plans' table: more lines than a 32-bit count holds is a typo.
constexpr double kMostPlanTop = 2147483647.0;

std::vector<std::string_view> layout_choices() {
    return {layout_name(Layout::contiguous), layout_name(Layout::channels_last)};
}

OptionSpec integer_option(std::string_view name, std::string_view help, double fallback, double low,
                          double high, std::string_view note = {}) {
    return {.name = name,
            .type = OptionType::integer,
            .help = help,
            .fallback = fallback,
            .low = low,
            .high = high,
            .note = note};
}

// How a net is profiled: the cost model's (measured costs) and T.profile's, with their own
// counts of steps.
std::vector<OptionSpec> profile_options(double warmup, double iterations) {
    return {
        integer_option("warmup", "untimed steps before the timed ones", warmup, 0, kMostCount),
        integer_option("iterations",
                       "timed steps: a time is their median (measured costs: lower quartile)",
                       iterations, 1, kMostCount),
        {.name = "layout",
         .type = OptionType::choice,
         .help = "the activations' memory layout while profiling",
         .fallback = std::string(layout_name(Layout::channels_last)),
         .choices = layout_choices()},
        integer_option("seed", "draws the weights and the random batch", 1.0, 0, kOptionUnbounded),
    };
}

// The cost model's options: T.plan.costs's, and a search's or a simulation's without `costs`.
// `net` and `sample` are required by T.plan.costs; a search or a simulation given `costs`
// takes them from there.
std::vector<OptionSpec> cost_options(bool net_required) {
    const std::string_view without_costs = net_required ? "" : "required without `costs`";
    std::vector<OptionSpec> options{
        {.name = "net",
         .type = OptionType::object,
         .help = "the net to lay out",
         .default_note = without_costs,
         .object = "tandem.Layer",
         .expected = "a net (nn.Sequential{...})",
         .required = net_required},
        {.name = "sample",
         .type = OptionType::table,
         .help = "one sample's shape",
         .default_note = without_costs,
         .expected = "a shape {C, H, W}",
         .required = net_required},
        {.name = "placement",
         .type = OptionType::table,
         .help = "the stages' layers, to weigh that placement (as parallel.placement takes it)",
         .default_note = "none: a graph's nodes and a block's layers one by one",
         .expected = "a list of stages, each a list of layer names"},
        {.name = "cost",
         .type = OptionType::choice,
         .help = "how layers are timed: profiled here (CPU devices) or from the hardware table; "
                 "auto: measured for a CPU topology or none, analytic otherwise",
         .fallback = std::string("auto"),
         .choices = {"auto", "measured", "analytic"}},
        {.name = "precision",
         .type = OptionType::choice,
         .help = "what convolutions and products compute in (measured CPU costs: fp32 or bf16, "
                 "which the net then keeps)",
         .fallback = std::string(precision_name(Precision::fp32)),
         .choices = {precision_name(Precision::fp32), precision_name(Precision::tf32),
                     precision_name(Precision::fp16), precision_name(Precision::bf16)}},
        {.name = "momentum",
         .type = OptionType::flag,
         .help = "the optimizer keeps a buffer per weight (memory)",
         .fallback = true},
    };
    for (OptionSpec& o : profile_options(2, 7)) options.push_back(std::move(o));
    options.push_back(integer_option("rounds", "measured costs: profiles of each kind, interleaved",
                                     3, 1, kMostCount));
    options.push_back({.name = "cache",
                       .type = OptionType::choice,
                       .help =
                           "measured costs: reuse what an earlier run of the same net, options, "
                           "CPU and build measured and keep this run's figures for later ones; "
                           "refresh: measure afresh and keep them (the cache folder: "
                           "TANDEM_CACHE_DIR, else ~/.cache/tandem)",
                       .fallback = std::string(cache_use_name(CacheUse::none)),
                       .choices = {cache_use_name(CacheUse::none), cache_use_name(CacheUse::reuse),
                                   cache_use_name(CacheUse::refresh)}});
    return options;
}

// What a search and a simulation share: the cost model's options (or `costs`), the topology,
// the batch and how the gradients are all-reduced.
std::vector<OptionSpec> planning_options() {
    std::vector<OptionSpec> options = cost_options(false);
    const PlannerOptions planner;
    const std::vector<OptionSpec> shared{
        {.name = "costs",
         .type = OptionType::object,
         .help = "a cost model from T.plan.costs, shared with other calls (one set of profiles)",
         .default_note = "none: one from the options above",
         .object = "tandem.PlanCosts",
         .expected = "a cost model from T.plan.costs"},
        {.name = "topology",
         .type = OptionType::table,
         .help = "the machine: a topology from T.plan.topology",
         .default_note = "required without `topologies`",
         .expected = "a topology (T.plan.topology('dgx1'))"},
        {.name = "topologies",
         .type = OptionType::table,
         .help = "several machines, each planned for",
         .default_note = "none",
         .expected = "a list of topologies"},
        {.name = "batch",
         .type = OptionType::integer,
         .help = "the global batch",
         .low = 1,
         .high = kMostPlanBatch,
         .required = true},
        {.name = "algorithm",
         .type = OptionType::choice,
         .help = "the gradients' all-reduce (auto: NCCL's own choice of algorithm and protocol "
                 "for each bucket; server: a parameter server on group 0's GPU, a baseline the "
                 "engine does not run)",
         .fallback = std::string(reduce_algorithm_name(planner.algorithm)),
         .choices = plan_algorithm_names()},
        integer_option("bucket_bytes", "the gradient buckets' size in bytes",
                       static_cast<double>(planner.bucket_bytes), 1, kOptionUnbounded),
        {.name = "overlap",
         .type = OptionType::flag,
         .help = "all-reduce each bucket during the last backward (false: after it)",
         .fallback = planner.overlap_backward},
        {.name = "trace",
         .type = OptionType::text,
         .help = "write the simulated step as a Chrome trace to this file",
         .fallback = std::string(),
         .default_note = "none"},
    };
    options.insert(options.end(), shared.begin(), shared.end());
    return options;
}

OptionSchema make_costs_schema() {
    std::vector<OptionSpec> options = cost_options(true);
    options.push_back({.name = "topology",
                       .type = OptionType::table,
                       .help = "with cost 'auto': analytic unless it is a CPU topology",
                       .default_note = "none",
                       .expected = "a topology (T.plan.topology('dgx1'))"});
    return {"plan.costs", "T.plan.costs", std::move(options)};
}

OptionSchema make_search_schema() {
    std::vector<OptionSpec> options = planning_options();
    const PlannerOptions planner;
    std::vector<double> micro_batches(planner.micro_batches.begin(), planner.micro_batches.end());
    options.push_back(integer_option("devices", "plan for this many devices only", 0, 0,
                                     kMostPlanDevices, "0: every count the topology allows"));
    options.push_back({.name = "micro_batches",
                       .type = OptionType::integers,
                       .help = "the micro-batch counts to try",
                       .fallback = std::move(micro_batches),
                       .low = 1,
                       .high = kMostCount});
    options.push_back({.name = "simpler_within",
                       .type = OptionType::number,
                       .help = "rank a simpler layout (busy threads within the cores for most "
                               "of its step, then fewer stages, then fewer micro-batches, then no "
                               "recomputation) above one predicted faster by less than this "
                               "fraction (0: by prediction alone)",
                       .fallback = planner.simpler_within,
                       .low = 0,
                       .high = 1});
    options.push_back(integer_option("top", "plans listed in the table", 10, 1, kMostPlanTop));
    options.push_back(integer_option("trace_plan", "which ranked plan `trace` writes (1: the best)",
                                     1, 1, kOptionUnbounded));
    return {"plan.search", "T.plan.search", std::move(options)};
}

OptionSchema make_simulate_schema() {
    std::vector<OptionSpec> options = planning_options();
    options.push_back({.name = "plan",
                       .type = OptionType::table,
                       .help = "the plan to simulate (its options below)",
                       .default_note = "required without `plans`",
                       .expected = "a plan table ({groups = 2, stages = 2, ...})"});
    options.push_back({.name = "plans",
                       .type = OptionType::table,
                       .help = "several plans, weighed with the same profiles",
                       .default_note = "none",
                       .expected = "a list of plan tables"});
    return {"plan.simulate", "T.plan.simulate", std::move(options)};
}

OptionSchema make_plan_table_schema() {
    const Plan plan;
    const std::vector<std::string_view> pipelines{
        pipeline_schedule_name(PipelineSchedule::gpipe),
        pipeline_schedule_name(PipelineSchedule::one_f_one_b)};
    return {"plan.simulate.plan",
            "T.plan.simulate",
            {
                integer_option("groups", "data-parallel groups", plan.groups, 1, kMostPlanDevices),
                integer_option("stages", "pipeline stages", plan.stages, 1, kMostPlanDevices),
                integer_option("micro_batches", "micro-batches a step", plan.micro_batches, 1,
                               kMostCount),
                {.name = "pipeline",
                 .type = OptionType::choice,
                 .help = "the pipeline schedule",
                 .fallback = std::string(pipeline_schedule_name(plan.schedule)),
                 .choices = pipelines},
                {.name = "schedule",
                 .type = OptionType::choice,
                 .help = "the old name of `pipeline`, read for one release",
                 .default_note = "none",
                 .choices = pipelines},
                {.name = "recompute",
                 .type = OptionType::flag,
                 .help = "every stage recomputes its activations",
                 .fallback = plan.recompute},
                {.name = "split",
                 .type = OptionType::table,
                 .help = "the cuts: after these layers",
                 .default_note = "the partitioner's",
                 .expected = "a list of layer names or 1-based layer numbers"},
                {.name = "devices",
                 .type = OptionType::integers,
                 .help = "the topology's devices the plan runs on, group by group",
                 .default_note = "the first groups x stages",
                 .low = 0,
                 .high = kMostCount,
                 .note = "0-based"},
                {.name = "placement",
                 .type = OptionType::table,
                 .help = "as a search's plan has it; not read (the costs' placement is the one "
                         "weighed)",
                 .default_note = "none",
                 .expected = "a list of stages, each a list of layer names"},
                {.name = "device_order",
                 .type = OptionType::choice,
                 .help = "as a search's plan has it; not read (`devices` is the order simulated)",
                 .default_note = "none",
                 .choices = {"packed", "spread"}},
            }};
}

OptionSchema make_layers_schema() {
    return {"plan.costs.layers",
            "costs:layers",
            {
                {.name = "device",
                 .type = OptionType::text,
                 .help = "the device model the layers are timed on (T.plan.models())",
                 .fallback = std::string(),
                 .default_note = "'H100' for analytic costs, 'cpu' for measured ones"},
                integer_option("batch", "the micro-batch", 1, 1, kMostPlanBatch),
                integer_option("threads", "measured costs: the CPU device's kernel threads", 1, 1,
                               1024),
            }};
}

OptionSchema make_profile_schema() {
    const ProfileOptions profile;
    std::vector<OptionSpec> options{
        integer_option("batch", "the samples of a step", 64, 1, kMostPlanBatch)};
    for (OptionSpec& o : profile_options(profile.warmup, profile.iterations))
        options.push_back(std::move(o));
    return {"profile", "T.profile", std::move(options)};
}

constexpr std::string_view kAutoAlgorithm = "auto";
constexpr std::string_view kServerAlgorithm = "server";

}  // namespace

std::vector<std::string_view> plan_algorithm_names() {
    return {reduce_algorithm_name(ReduceAlgorithm::ring),
            reduce_algorithm_name(ReduceAlgorithm::tree), kAutoAlgorithm, kServerAlgorithm};
}

PlanAlgorithm parse_plan_algorithm(std::string_view name) {
    PlanAlgorithm p;
    if (name == kAutoAlgorithm) {
        p.nccl_auto = true;
    } else if (name == kServerAlgorithm) {
        p.parameter_server = true;
    } else {
        try {
            p.algorithm = parse_reduce_algorithm(name);
        } catch (const ConfigError&) {
            std::string known;
            for (const auto c : plan_algorithm_names())
                known += (known.empty() ? "" : ", ") + std::string(c);
            throw ConfigError("unknown algorithm '" + std::string(name) + "'; known: " + known +
                              " (auto: NCCL's own choice; server: a parameter server on one GPU, "
                              "a baseline the engine does not run)");
        }
    }
    return p;
}

const OptionSchema& plan_costs_option_schema() {
    static const OptionSchema schema = make_costs_schema();
    return schema;
}

const OptionSchema& plan_search_option_schema() {
    static const OptionSchema schema = make_search_schema();
    return schema;
}

const OptionSchema& plan_simulate_option_schema() {
    static const OptionSchema schema = make_simulate_schema();
    return schema;
}

const OptionSchema& plan_table_option_schema() {
    static const OptionSchema schema = make_plan_table_schema();
    return schema;
}

const OptionSchema& plan_layers_option_schema() {
    static const OptionSchema schema = make_layers_schema();
    return schema;
}

const OptionSchema& profile_option_schema() {
    static const OptionSchema schema = make_profile_schema();
    return schema;
}

}  // namespace tandem

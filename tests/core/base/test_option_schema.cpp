// The option schemas of T.Engine, T.data.Loader (its shard and transforms), the data sources
// (T.data.lmdb, T.data.list, ...), T.devices, the planner's and T.profile's, the optimizers',
// T.MetricsLog's and T.tensor's: each entry well formed, its words as messages and the API
// reference show them, and its defaults those of the C++ options it fills (the binding takes the
// schema's; C++ callers the struct's).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "base/error.h"
#include "base/option_schema.h"
#include "data/augment.h"
#include "data/interactions.h"
#include "data/loader_options.h"
#include "data/pipeline_schema.h"
#include "data/source_schema.h"
#include "device/cpu/cpu_device.h"
#include "device/device_schema.h"
#include "device/workspace_budget.h"
#include "engine/engine.h"
#include "engine/engine_schema.h"
#include "io/metrics_log_schema.h"
#include "optim/optim_schema.h"
#include "optim/optimizer.h"
#include "plan/analytic_costs.h"
#include "plan/plan_schema.h"
#include "plan/planner.h"
#include "plan/profiler.h"
#include "tensor/dtype.h"
#include "tensor/tensor_schema.h"
#if TANDEM_CUDA
#include "device/cuda/cuda_backend.h"
#endif

namespace tandem::test {
namespace {

// The binding's list (lua/option_table.cpp's option_schemas(), which no library of core/ can
// hold), again: tests/lua/test_option_schemas.lua checks that it names each of these. nn.Lua's
// is the binding's own (lua/lua_layer.h): its values are Lua functions.
std::vector<const OptionSchema*> schemas() {
    return {&engine_option_schema(),       &loader_option_schema(),
            &loader_shard_option_schema(), &loader_transform_option_schema(),
            &folder_option_schema(),       &lmdb_option_schema(),
            &list_option_schema(),         &mnist_option_schema(),
            &interactions_option_schema(), &interactions_info_option_schema(),
            &augment_option_schema(),      &cpu_device_option_schema(),
            &cuda_device_option_schema(),  &plan_costs_option_schema(),
            &plan_search_option_schema(),  &plan_simulate_option_schema(),
            &plan_table_option_schema(),   &plan_layers_option_schema(),
            &profile_option_schema(),      &sgd_option_schema(),
            &adam_option_schema(),         &adamw_option_schema(),
            &metrics_log_option_schema(),  &tensor_option_schema()};
}

double number_default(const OptionSchema& schema, std::string_view name) {
    const OptionSpec* o = schema.find(name);
    EXPECT_NE(o, nullptr) << schema.name << " has no " << name;
    return o ? std::get<double>(o->fallback) : 0;
}

bool flag_default(const OptionSchema& schema, std::string_view name) {
    const OptionSpec* o = schema.find(name);
    EXPECT_NE(o, nullptr) << schema.name << " has no " << name;
    return o ? std::get<bool>(o->fallback) : false;
}

std::string text_default(const OptionSchema& schema, std::string_view name) {
    const OptionSpec* o = schema.find(name);
    EXPECT_NE(o, nullptr) << schema.name << " has no " << name;
    return o ? std::get<std::string>(o->fallback) : "";
}

TEST(OptionSchema, EveryEntryIsWellFormed) {
    std::set<std::string_view> schema_names;
    for (const OptionSchema* schema : schemas()) {
        EXPECT_TRUE(schema_names.insert(schema->name).second) << schema->name;
        std::set<std::string_view> names;
        for (const OptionSpec& o : schema->options) {
            const std::string where = std::string(schema->name) + "." + std::string(o.name);
            EXPECT_TRUE(names.insert(o.name).second) << where << " twice";
            EXPECT_EQ(schema->find(o.name), &o) << where;
            EXPECT_FALSE(o.help.empty()) << where;
            EXPECT_EQ(o.type == OptionType::choice, !o.choices.empty()) << where;
            const bool is_object = o.type == OptionType::object || o.type == OptionType::objects;
            EXPECT_EQ(is_object, !o.object.empty()) << where;
            EXPECT_EQ(is_object || o.type == OptionType::table, !o.expected.empty()) << where;
            // A required option has no default; any other has a value or says what it is.
            const bool has_value = !std::holds_alternative<std::monostate>(o.fallback);
            EXPECT_EQ(o.required, !has_value && o.default_note.empty()) << where;
            if (o.type == OptionType::integer || o.type == OptionType::number ||
                o.type == OptionType::extent) {
                EXPECT_LE(o.low, o.high) << where;
            }
            // Only a number's range may leave out its low end.
            if (o.above_low) {
                EXPECT_EQ(o.type, OptionType::number) << where;
            }
            if (const auto* x = std::get_if<double>(&o.fallback)) {
                // A default inside the range (0 for a size or an extent: none given).
                if (o.type == OptionType::integer || o.type == OptionType::number) {
                    EXPECT_TRUE(*x >= o.low && *x <= o.high) << where;
                    EXPECT_FALSE(o.above_low && *x == o.low) << where;
                }
            }
            // A text default is a choice's (one of them) or a text option's.
            if (const auto* text = std::get_if<std::string>(&o.fallback)) {
                ASSERT_TRUE(o.type == OptionType::choice || o.type == OptionType::text) << where;
                if (o.type == OptionType::choice) {
                    EXPECT_NE(std::find(o.choices.begin(), o.choices.end(), *text), o.choices.end())
                        << where << ": the default is no choice";
                }
            }
            if (!o.at_most.empty()) {
                const OptionSpec* bound = schema->find(o.at_most);
                ASSERT_NE(bound, nullptr) << where << " is bounded by an unknown option";
                EXPECT_EQ(bound->type, OptionType::integer) << where;
            }
        }
    }
}

TEST(OptionSchema, DefaultsAreTheStructsDefaults) {
    const LoaderOptions loader;
    const OptionSchema& l = loader_option_schema();
    EXPECT_EQ(number_default(l, "batch"), static_cast<double>(loader.batch));
    EXPECT_EQ(number_default(l, "threads"), loader.threads);
    EXPECT_EQ(number_default(l, "seed"), static_cast<double>(loader.seed));
    EXPECT_EQ(number_default(l, "prefetch"), loader.prefetch);
    EXPECT_EQ(flag_default(l, "shuffle"), loader.shuffle);
    EXPECT_EQ(flag_default(l, "strict"), loader.strict);
    EXPECT_EQ(flag_default(l, "quiet"), loader.quiet);
    EXPECT_EQ(parse_last_batch(text_default(l, "last")), loader.last);
    EXPECT_EQ(parse_layout(text_default(l, "layout")), loader.layout);
    for (const auto& choice : l.find("last")->choices)
        EXPECT_NO_THROW(parse_last_batch(std::string(choice))) << choice;
    EXPECT_EQ(number_default(loader_shard_option_schema(), "index"), loader.shard_index + 1);
    EXPECT_EQ(number_default(loader_shard_option_schema(), "count"), loader.shard_count);

    const TransformOptions& t = loader.transform;
    const OptionSchema& ts = loader_transform_option_schema();
    EXPECT_EQ(number_default(ts, "channels"), t.channels);
    EXPECT_EQ(number_default(ts, "resize"), t.resize);
    EXPECT_EQ(number_default(ts, "crop"), t.crop_height);
    EXPECT_EQ(number_default(ts, "crop"), t.crop_width);
    EXPECT_EQ(flag_default(ts, "random_crop"), t.random_crop);
    EXPECT_EQ(number_default(ts, "pad"), t.pad);
    EXPECT_EQ(number_default(ts, "fill"), t.fill);
    EXPECT_EQ(flag_default(ts, "flip"), t.flip);
    EXPECT_EQ(number_default(ts, "brightness"), t.brightness);
    EXPECT_EQ(number_default(ts, "contrast"), t.contrast);
    EXPECT_EQ(number_default(ts, "saturation"), t.saturation);
    EXPECT_EQ(std::vector<float>{static_cast<float>(number_default(ts, "mean"))}, t.mean);
    EXPECT_EQ(std::vector<float>{static_cast<float>(number_default(ts, "std"))}, t.std);

    const EngineOptions engine;
    const OptionSchema& e = engine_option_schema();
    EXPECT_EQ(number_default(e, "seed"), static_cast<double>(engine.seed));
    EXPECT_EQ(flag_default(e, "trace"), engine.trace != nullptr);
    for (const auto& choice : e.find("layout")->choices)
        EXPECT_NO_THROW(parse_layout(choice)) << choice;

    // The sources' defaults: LmdbSource's and list_source's classes and root (0: the largest
    // label + 1; "": the list file's folder), InteractionShape's and AugmentOptions' fields.
    EXPECT_EQ(number_default(lmdb_option_schema(), "classes"), 0);
    EXPECT_EQ(number_default(list_option_schema(), "classes"), 0);
    EXPECT_EQ(std::get<std::string>(list_option_schema().find("root")->fallback), "");
    EXPECT_EQ(number_default(mnist_option_schema(), "mean"), 0);
    EXPECT_EQ(number_default(mnist_option_schema(), "std"), 1);
    const InteractionShape shape;
    for (const OptionSchema* s :
         {&interactions_option_schema(), &interactions_info_option_schema()}) {
        EXPECT_EQ(number_default(*s, "length"), static_cast<double>(shape.length));
        EXPECT_EQ(number_default(*s, "features"), static_cast<double>(shape.features));
    }
    const AugmentOptions augment;
    EXPECT_EQ(flag_default(augment_option_schema(), "flip"), augment.flip);
    EXPECT_EQ(number_default(augment_option_schema(), "crop_pad"),
              static_cast<double>(augment.crop_pad));
    EXPECT_EQ(number_default(augment_option_schema(), "fill"), augment.fill);

    // The planner's: PlannerOptions', Plan's and ProfileOptions' (T.profile's counts).
    const PlannerOptions planner;
    for (const OptionSchema* s : {&plan_search_option_schema(), &plan_simulate_option_schema()}) {
        EXPECT_EQ(number_default(*s, "bucket_bytes"), static_cast<double>(planner.bucket_bytes));
        EXPECT_EQ(flag_default(*s, "overlap"), planner.overlap_backward);
        EXPECT_EQ(text_default(*s, "algorithm"), reduce_algorithm_name(planner.algorithm));
    }
    const std::vector<double> micro_batches(planner.micro_batches.begin(),
                                            planner.micro_batches.end());
    EXPECT_EQ(
        std::get<std::vector<double>>(plan_search_option_schema().find("micro_batches")->fallback),
        micro_batches);
    EXPECT_EQ(number_default(plan_search_option_schema(), "devices"), planner.devices);
    const Plan plan;
    const OptionSchema& p = plan_table_option_schema();
    EXPECT_EQ(number_default(p, "groups"), plan.groups);
    EXPECT_EQ(number_default(p, "stages"), plan.stages);
    EXPECT_EQ(number_default(p, "micro_batches"), plan.micro_batches);
    EXPECT_EQ(parse_pipeline_schedule(text_default(p, "pipeline")), plan.schedule);
    EXPECT_EQ(flag_default(p, "recompute"), plan.recompute);
    const ProfileOptions profile;
    EXPECT_EQ(number_default(profile_option_schema(), "warmup"), profile.warmup);
    EXPECT_EQ(number_default(profile_option_schema(), "iterations"), profile.iterations);
    EXPECT_EQ(number_default(profile_option_schema(), "seed"), static_cast<double>(profile.seed));
    for (const OptionSchema* s : {&plan_costs_option_schema(), &profile_option_schema()}) {
        for (const auto& choice : s->find("layout")->choices)
            EXPECT_NO_THROW(parse_layout(choice)) << choice;
    }
    for (const auto& choice : plan_costs_option_schema().find("precision")->choices)
        EXPECT_NO_THROW(parse_precision(choice)) << choice;

    // The optimizers' (kept as floats: the schema's default as written, the struct's rounded).
    const auto as_float = [](double x) { return static_cast<float>(x); };
    const SgdOptions sgd;
    const OptionSchema& sg = sgd_option_schema();
    EXPECT_EQ(as_float(number_default(sg, "lr")), sgd.lr);
    EXPECT_EQ(as_float(number_default(sg, "momentum")), sgd.momentum);
    EXPECT_EQ(as_float(number_default(sg, "dampening")), sgd.dampening);
    EXPECT_EQ(as_float(number_default(sg, "weight_decay")), sgd.weight_decay);
    EXPECT_EQ(flag_default(sg, "nesterov"), sgd.nesterov);
    const AdamOptions adam;
    for (const OptionSchema* s : {&adam_option_schema(), &adamw_option_schema()}) {
        EXPECT_EQ(as_float(number_default(*s, "lr")), adam.lr);
        EXPECT_EQ(as_float(number_default(*s, "eps")), adam.eps);
        const auto& betas = std::get<std::vector<double>>(s->find("betas")->fallback);
        ASSERT_EQ(betas.size(), 2u);
        EXPECT_EQ(as_float(betas[0]), adam.beta1);
        EXPECT_EQ(as_float(betas[1]), adam.beta2);
    }
    EXPECT_EQ(as_float(number_default(adam_option_schema(), "weight_decay")), adam.weight_decay);
    EXPECT_EQ(number_default(adamw_option_schema(), "weight_decay"), 0.01);  // PyTorch's
    for (const OptionSchema* s : {&sg, &adam_option_schema(), &adamw_option_schema()})
        EXPECT_EQ(as_float(number_default(*s, "clip_norm")), OptimizerOptions{}.clip_norm);

    // T.tensor's dtypes are DType's (dtype.h), by the lowercase names Lua gives them.
    std::set<std::string> dtypes, choices;
    for (const DType d : {DType::f32, DType::i32, DType::u8}) {
        std::string name(dtype_name(d));
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        dtypes.insert(name);
    }
    for (const auto& choice : tensor_option_schema().find("dtype")->choices)
        choices.emplace(choice);
    EXPECT_EQ(choices, dtypes);

    const CpuDeviceOptions cpu;
    EXPECT_EQ(number_default(cpu_device_option_schema(), "memory"), cpu.memory);
    EXPECT_EQ(number_default(cpu_device_option_schema(), "threads"), cpu.threads);
#if TANDEM_CUDA
    const CudaDeviceOptions cuda;
    const OptionSchema& c = cuda_device_option_schema();
    EXPECT_EQ(number_default(c, "memory"), cuda.memory);
    EXPECT_EQ(number_default(c, "workspace"), cuda.workspace);
    EXPECT_EQ(flag_default(c, "benchmark"), cuda.benchmark);
    EXPECT_EQ(flag_default(c, "tf32"), cuda.tf32);
#endif
}

TEST(OptionSchema, CudnnWorkspaceDefaultFollowsTheCap) {
    constexpr std::size_t MiB = std::size_t(1) << 20;
    EXPECT_EQ(default_workspace_budget(256 * MiB), 64 * MiB);
    EXPECT_EQ(default_workspace_budget(4096 * MiB), 256 * MiB);
    EXPECT_EQ(default_workspace_budget(80 * 1024 * MiB), 5 * 1024 * MiB);
    EXPECT_EQ(default_workspace_budget(141 * 1024 * MiB), 8 * 1024 * MiB);
}

TEST(OptionSchema, WordsSayWhatAValueMustBe) {
    const OptionSchema& l = loader_option_schema();
    EXPECT_EQ(expected_text(*l.find("batch")), "an integer in [1, 16777216]");
    EXPECT_EQ(expected_text(*l.find("seed")), "a non-negative integer");
    EXPECT_EQ(expected_text(*l.find("last")), "'drop', 'keep' or 'pad'");
    EXPECT_EQ(expected_text(*l.find("layout")), "'contiguous' or 'channels_last'");
    EXPECT_EQ(expected_text(*l.find("shuffle")), "true or false");
    EXPECT_EQ(default_text(*l.find("last")), "'drop'");
    EXPECT_EQ(default_text(*l.find("batch")), "32");
    EXPECT_EQ(default_text(*l.find("source")), "required");
    EXPECT_EQ(default_text(*l.find("device")), "the host");
    const OptionSchema& cpu = cpu_device_option_schema();
    EXPECT_EQ(expected_text(*cpu.find("threads")), "an integer in [0, 1024] (0: every core)");
    EXPECT_EQ(expected_text(*cpu.find("memory")),
              "a size such as '512MB' or a byte count, above 0 (leave it out for none)");
    const OptionSchema& ts = loader_transform_option_schema();
    EXPECT_EQ(expected_text(*ts.find("brightness")), "a finite number >= 0");
    EXPECT_EQ(expected_text(*ts.find("crop")),
              "an integer in [1, 65536] or a pair {height, width} of them");
    // A number's range without an end, or without its low end itself.
    const OptionSchema& mnist = mnist_option_schema();
    EXPECT_EQ(expected_text(*mnist.find("mean")), "a finite number");
    EXPECT_EQ(expected_text(*mnist.find("std")), "a finite number > 0");
    EXPECT_EQ(expected_text(*lmdb_option_schema().find("classes")),
              "a non-negative integer (0: the largest label + 1)");
    EXPECT_EQ(default_text(*list_option_schema().find("root")), "the file's folder");
    OptionSpec unit{.name = "p",
                    .type = OptionType::number,
                    .help = "a probability",
                    .low = 0,
                    .high = 1,
                    .above_low = true};
    EXPECT_EQ(expected_text(unit), "a finite number in (0, 1]");
    unit.low = -HUGE_VAL;
    EXPECT_EQ(expected_text(unit), "a finite number <= 1");
    unit.below_high = true;
    EXPECT_EQ(expected_text(unit), "a finite number < 1");
    unit.low = 0, unit.above_low = false;
    EXPECT_EQ(expected_text(unit), "a finite number in [0, 1)");
    // A list's entries, in the plural: each in the range, or positive, or from 0.
    unit.type = OptionType::pair;
    EXPECT_EQ(expected_text(unit), "a pair of finite numbers in [0, 1)");
    const OptionSchema& search = plan_search_option_schema();
    EXPECT_EQ(expected_text(*search.find("micro_batches")), "a list of integers in [1, 1048576]");
    EXPECT_EQ(default_text(*search.find("micro_batches")), "{1, 2, 4, 8, 16, 32}");
    OptionSpec list{.name = "l", .type = OptionType::integers, .help = "a list", .low = 1};
    list.high = kOptionUnbounded;
    EXPECT_EQ(expected_text(list), "a list of positive integers");
    list.low = 0;
    EXPECT_EQ(expected_text(list), "a list of non-negative integers");
    try {
        throw_bad_option(l, *l.find("batch"), "1.5");
        ADD_FAILURE() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_STREQ(e.what(),
                     "T.data.Loader: option 'batch' must be an integer in [1, 16777216], got 1.5");
    }
}

}  // namespace
}  // namespace tandem::test

// The parallel options' schema: one entry per option, each reading and writing its field of
// ParallelOptions, refusing bad values by name, comparable across MPI ranks where it must be.
#include <gtest/gtest.h>

#include <set>

#include "base/error.h"
#include "parallel/parallel_schema.h"

namespace tandem::test {
namespace {

TEST(ParallelSchema, NamesAndFlagsAreUnique) {
    std::set<std::string_view> names, flags;
    for (const auto& o : parallel_option_schema()) {
        EXPECT_TRUE(names.insert(o.name).second) << o.name;
        if (!o.recipe_flag.empty()) {
            EXPECT_TRUE(flags.insert(o.recipe_flag).second) << o.recipe_flag;
        }
        EXPECT_FALSE(o.help.empty()) << o.name;
        EXPECT_EQ(find_parallel_option(o.name), &o);
        EXPECT_EQ(o.kind == OptionKind::choice, !o.choices.empty()) << o.name;
    }
    EXPECT_EQ(find_parallel_option("schedule"), nullptr) << "renamed: pipeline";
    for (const auto& renamed : renamed_parallel_options()) {
        EXPECT_EQ(find_parallel_option(renamed.old_name), nullptr) << renamed.old_name;
        EXPECT_NE(find_parallel_option(renamed.new_name), nullptr) << renamed.new_name;
    }
}

TEST(ParallelSchema, EveryOptionReadsAndWritesItsField) {
    const ParallelOptions defaults;
    ParallelOptions changed;
    changed.groups = 3, changed.stages = 2, changed.micro_batches = 5;
    changed.pipeline = PipelineSchedule::one_f_one_b;
    changed.cuts = {4};
    changed.placement = {{"conv1", "g.a"}, {"g.b", "fc1"}};
    changed.recompute = {false, true};
    changed.batch_norm = BatchNormMode::deferred;
    changed.algorithm = ReduceAlgorithm::tree;
    changed.bucket_bytes = 1000;
    changed.overlap_backward = false;
    changed.deterministic = true;
    changed.average_every = 2;
    changed.averaging = AveragingAlgorithm::bmuf;
    changed.block_momentum = 0.5, changed.block_lr = 0.7, changed.block_nesterov = false;
    changed.elastic_alpha = 0.25;
    changed.mpi = true;
    for (const auto& o : parallel_option_schema()) {
        // Each option's value differs between the two, and copying it over makes them agree.
        EXPECT_NE(o.get(defaults), o.get(changed))
            << o.name << ": a field the test does not change";
        ParallelOptions base = defaults;
        // A list has a flag per stage; a placement lists the stages (and sets their count).
        if (o.name == "recompute" || o.name == "placement") base.stages = changed.stages;
        ParallelOptions p = base;
        o.set(p, o.get(changed));
        EXPECT_EQ(o.get(p), o.get(changed)) << o.name;
        for (const auto& other : parallel_option_schema())
            if (&other != &o) {
                EXPECT_EQ(other.get(p), other.get(base)) << o.name << " changed " << other.name;
            }
    }
    ParallelOptions p;
    find_parallel_option("split")->set(p, std::string("auto"));
    EXPECT_TRUE(p.auto_split);
    EXPECT_EQ(find_parallel_option("split")->get(p), OptionValue(std::string("auto")));
    find_parallel_option("recompute")->set(p, true);
    EXPECT_EQ(p.recompute, std::vector<bool>{true});
}

TEST(ParallelSchema, BadValuesAreRefusedByName) {
    ParallelOptions p;
    auto refuses = [&](std::string_view name, OptionValue value, const std::string& says) {
        try {
            find_parallel_option(name)->set(p, value);
            ADD_FAILURE() << name << " took a bad value";
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    };
    refuses("groups", std::int64_t(0), "parallel.groups must be at least 1, got 0");
    refuses("micro_batches", std::int64_t(-3), "parallel.micro_batches must be at least 1");
    p.stages = 2;
    refuses("placement", StageNames{{"a"}, {"b"}, {"c"}},
            "parallel.placement lists 3 stages, parallel.stages is 2");
    p.stages = 1;
    find_parallel_option("placement")->set(p, StageNames{{"a"}, {"b"}, {"c"}});
    EXPECT_EQ(p.stages, 3) << "a placement sets the stage count";
    p = ParallelOptions{};
    refuses("average_every", std::int64_t(-1),
            "parallel.average_every must be at least 0 (0: off)");
    refuses("pipeline", std::string("zigzag"),
            "unknown pipeline schedule 'zigzag' (known: gpipe, 1f1b)");
    refuses("batch_norm", std::string("global"), "unknown batch-norm mode 'global'");
    refuses("split", std::string("even"),
            "parallel.split must be 'auto' or a list of layers, got 'even'");
    refuses("overlap", std::int64_t(1), "parallel.overlap must be true or false");
    refuses("bucket_bytes", std::int64_t(0), "parallel.bucket_bytes must be at least 1");
    refuses("averaging", std::string("bmfu"), "parallel.averaging: unknown algorithm 'bmfu'");
    refuses("block_momentum", -0.1, "parallel.block_momentum must be in [0, 1)");
    refuses("elastic_alpha", 1.5, "parallel.elastic_alpha must be in [0, 1]");
    refuses("block_lr", std::string("fast"), "parallel.block_lr must be a number");
    refuses("recompute", std::vector<bool>{true, false},
            "parallel.recompute lists 2 flags for 1 stage: give one flag per stage");
    p.stages = 2;
    refuses("recompute", std::vector<bool>{true}, "parallel.recompute lists 1 flag for 2 stages");
}

TEST(ParallelSchema, RanksCompareTheLayoutShapingOptionsAsNumbers) {
    const ParallelOptions defaults;
    ParallelOptions other;
    other.pipeline = PipelineSchedule::one_f_one_b, other.batch_norm = BatchNormMode::sync;
    std::set<std::string_view> agreeing;
    for (const auto& o : parallel_option_schema()) {
        if (!o.ranks_agree) continue;
        agreeing.insert(o.name);
        EXPECT_NO_THROW(option_as_number(o, o.get(defaults))) << o.name;
    }
    // What the collectives' shapes depend on.
    for (const char* name : {"groups", "stages", "micro_batches", "average_every", "deterministic",
                             "algorithm", "batch_norm", "bucket_bytes", "averaging",
                             "block_momentum", "block_lr", "block_nesterov", "elastic_alpha"})
        EXPECT_TRUE(agreeing.count(name)) << name;
    const ParallelOption& pipeline = *find_parallel_option("pipeline");
    EXPECT_NE(option_as_number(pipeline, pipeline.get(defaults)),
              option_as_number(pipeline, pipeline.get(other)));
    EXPECT_EQ(option_text(pipeline, pipeline.get(other)), "1f1b");
    EXPECT_EQ(
        option_text(*find_parallel_option("split"), find_parallel_option("split")->get(defaults)),
        "none");
}

}  // namespace
}  // namespace tandem::test

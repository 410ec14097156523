#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "base/error.h"
#include "base/rng.h"
#include "device/cpu/cpu_device.h"
#include "layers/conv2d.h"
#include "layers/cross_entropy.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/pool2d.h"
#include "layers/relu.h"
#include "plan/partitioner.h"

namespace tandem::test {
namespace {

constexpr std::size_t kGiB = std::size_t(1) << 30;

// A cost table with the given times (forward = backward = t / 2) and no memory.
std::vector<LayerCost> timed(const std::vector<double>& times) {
    std::vector<LayerCost> costs;
    for (std::size_t i = 0; i < times.size(); ++i) {
        LayerCost c;
        c.name = std::to_string(i + 1);
        c.name.insert(0, 1, 'l');  // not "l" + ...: GCC 12 -Wrestrict false positive
        c.forward_ms = times[i] / 2;
        c.backward_ms = times[i] / 2;
        costs.push_back(c);
    }
    return costs;
}

PartitionOptions options(int stages, std::size_t cap = kGiB) {
    PartitionOptions o;
    o.stages = stages;
    o.caps = {cap};
    return o;
}

template <class E>
std::string error_text(const std::function<void()>& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    ADD_FAILURE() << "no exception";
    return "";
}

// Every split, in lexicographic order of its cuts; the first with the smallest
// (slowest stage, sum of squared times) that fits: the partitioner's documented choice.
std::optional<std::vector<std::size_t>> brute_force(const std::vector<LayerCost>& costs,
                                                    const PartitionOptions& o) {
    const std::size_t L = costs.size(), S = static_cast<std::size_t>(o.stages);
    std::optional<std::vector<std::size_t>> best;
    double best_max = 0, best_sq = 0;
    std::vector<std::size_t> cuts(S - 1);
    for (std::size_t k = 0; k + 1 < S; ++k) cuts[k] = k + 1;
    while (true) {
        const Partition p = evaluate_partition(costs, cuts, o);
        if (p.fits()) {
            double sq = 0;
            for (const auto& st : p.stages) sq += st.time_ms * st.time_ms;
            if (!best || p.slowest_ms() < best_max ||
                (p.slowest_ms() == best_max && sq < best_sq)) {
                best = cuts;
                best_max = p.slowest_ms();
                best_sq = sq;
            }
        }
        // Next combination of S - 1 increasing cuts in [1, L - 1].
        std::size_t k = S - 1;
        while (k > 0 && cuts[k - 1] == L - 1 - (S - 1 - k)) --k;
        if (k == 0) break;
        ++cuts[k - 1];
        for (std::size_t m = k; m + 1 < S; ++m) cuts[m] = cuts[m - 1] + 1;
    }
    return best;
}

// A random table: times and byte counts as small integers (sums exact in doubles, so the
// tie-breaking is exact too), or real times when `real`.
std::vector<LayerCost> random_costs(std::uint64_t key, std::size_t L, bool real) {
    std::vector<LayerCost> costs;
    std::size_t input = 1 + rng_bits(key, 999) % 50;
    for (std::size_t i = 0; i < L; ++i) {
        auto draw = [&](std::uint64_t j, std::uint64_t n) { return rng_bits(key, i * 16 + j) % n; };
        LayerCost c;
        c.name = std::to_string(i + 1);
        c.name.insert(0, "layer");
        c.forward_ms = real ? 10 * rng_uniform(key, i * 16 + 1) : double(draw(1, 10));
        c.backward_ms = real ? 20 * rng_uniform(key, i * 16 + 2) : double(draw(2, 20));
        c.parameter_bytes = draw(3, 4) == 0 ? 0 : draw(4, 100);
        c.optimizer_bytes = draw(5, 2) ? c.parameter_bytes : 0;
        c.input_bytes = input;
        c.saved_bytes = draw(6, 3) == 0 ? draw(7, 40) : 0;
        c.output_bytes = 1 + draw(8, 50);
        input = c.output_bytes;
        costs.push_back(c);
    }
    return costs;
}

PartitionOptions random_options(std::uint64_t key, std::size_t L) {
    PartitionOptions o;
    o.stages = 1 + static_cast<int>(rng_bits(key, 1) % std::min<std::size_t>(4, L));
    o.schedule = rng_bits(key, 2) % 2 ? PipelineSchedule::gpipe : PipelineSchedule::one_f_one_b;
    o.micro_batches = 1 + static_cast<int>(rng_bits(key, 3) % 6);
    for (int s = 0; s < o.stages; ++s) {
        o.caps.push_back(100 + rng_bits(key, 10 + std::uint64_t(s)) % 1500);
        o.recompute.push_back(rng_bits(key, 20 + std::uint64_t(s)) % 3 == 0);
    }
    return o;
}

TEST(PartitionerStageCost, InFlightPerSchedule) {
    for (int s = 0; s < 4; ++s)
        EXPECT_EQ(micro_batches_in_flight(PipelineSchedule::gpipe, 4, s, 8), 8);
    const int m8[] = {4, 3, 2, 1}, m2[] = {2, 2, 2, 1};
    for (int s = 0; s < 4; ++s) {
        EXPECT_EQ(micro_batches_in_flight(PipelineSchedule::one_f_one_b, 4, s, 8), m8[s]);
        EXPECT_EQ(micro_batches_in_flight(PipelineSchedule::one_f_one_b, 4, s, 2), m2[s]);
    }
    EXPECT_THROW(micro_batches_in_flight(PipelineSchedule::gpipe, 4, 0, 0), ConfigError);
    EXPECT_THROW(micro_batches_in_flight(PipelineSchedule::gpipe, 4, 4, 4), ConfigError);
    EXPECT_EQ(parse_pipeline_schedule("1f1b"), PipelineSchedule::one_f_one_b);
    EXPECT_EQ(parse_pipeline_schedule("gpipe"), PipelineSchedule::gpipe);
    EXPECT_NE(
        error_text<ConfigError>([] { parse_pipeline_schedule("zigzag"); }).find("gpipe, 1f1b"),
        std::string::npos);
}

TEST(PartitionerStageCost, MemoryFormula) {
    // Three layers: input 100 B, outputs 40 and 10 and 4; the middle one saves 30 B more.
    std::vector<LayerCost> costs = timed({1, 2, 3});
    const std::size_t in[] = {100, 40, 10}, out[] = {40, 10, 4}, saved[] = {0, 30, 0},
                      params[] = {1000, 0, 200};
    for (std::size_t i = 0; i < 3; ++i) {
        costs[i].input_bytes = in[i];
        costs[i].output_bytes = out[i];
        costs[i].saved_bytes = saved[i];
        costs[i].parameter_bytes = params[i];
        costs[i].optimizer_bytes = params[i];
    }
    const StageCosts sc(costs);
    EXPECT_DOUBLE_EQ(sc.time_ms(0, 3, false), 6);
    EXPECT_DOUBLE_EQ(sc.time_ms(1, 3, true), 2.5 + 5);  // forward (1 + 1.5) once more

    // Layers 2..3 as the last of 2 stages, 4 micro-batches: one micro-batch leaves 40 + 30 + 10.
    const std::size_t one = 80;
    const int gpipe = micro_batches_in_flight(PipelineSchedule::gpipe, 2, 1, 4);
    const int ofob = micro_batches_in_flight(PipelineSchedule::one_f_one_b, 2, 1, 4);
    const StageMemory g = sc.memory(1, 3, gpipe, false);
    EXPECT_EQ(g.weights, 200u);
    EXPECT_EQ(g.gradients, 200u);
    EXPECT_EQ(g.optimizer, 200u);
    EXPECT_EQ(g.activations, 4 * one);
    EXPECT_EQ(g.total(), 600 + 4 * one);
    EXPECT_EQ(sc.memory(1, 3, ofob, false).activations, 1 * one);
    // Recomputation: 4 boundary inputs (40 B) and the rest of one micro-batch (30 + 10).
    EXPECT_EQ(sc.memory(1, 3, gpipe, true).activations, 4 * 40u + 40u);
    // The first stage of 2 under 1F1B holds 2 micro-batches of 100 + 40 + 30.
    const int first = micro_batches_in_flight(PipelineSchedule::one_f_one_b, 2, 0, 4);
    EXPECT_EQ(sc.memory(0, 2, first, false).activations, 2 * 170u);
    EXPECT_EQ(sc.memory(0, 2, first, false).weights, 1000u);
}

TEST(PartitionerStageCost, FromProfile) {
    NetProfile profile;
    profile.input = Shape({2, 3, 4, 4});  // 96 floats
    for (int i = 0; i < 2; ++i) {
        LayerProfile lp;
        lp.name = i == 0 ? "conv1" : "fc1";
        lp.forward_ms = 1 + i;
        lp.backward_ms = 2 + i;
        lp.memory.parameter_bytes = 100 * std::size_t(i + 1);
        lp.memory.output_bytes = 64 / std::size_t(i + 1);
        lp.memory.saved_bytes = 8;
        lp.kept_input_bytes = i == 0 ? 96 * sizeof(float) : 64;  // the images; conv1's output
        profile.layers.push_back(lp);
    }
    const auto with = layer_costs(profile, 1), without = layer_costs(profile, 0);
    ASSERT_EQ(with.size(), 2u);
    EXPECT_EQ(with[0].input_bytes, 96u * sizeof(float));
    EXPECT_EQ(with[1].input_bytes, 64u);  // conv1's output
    EXPECT_EQ(with[1].output_bytes, 32u);
    EXPECT_EQ(with[1].optimizer_bytes, 200u);
    EXPECT_EQ(without[1].optimizer_bytes, 0u);
    EXPECT_EQ(with[0].activation_bytes(), 96u * sizeof(float) + 8);
    EXPECT_DOUBLE_EQ(with[1].time_ms(), 5);
}

TEST(Partitioner, MatchesBruteForce) {
    int feasible = 0, infeasible = 0;
    for (std::uint64_t trial = 0; trial < 400; ++trial) {
        const std::uint64_t key = rng_key(4242, trial);
        const std::size_t L = 1 + rng_bits(key, 0) % 10;
        const auto costs = random_costs(key, L, false);
        const PartitionOptions o = random_options(rng_key(key, 1), L);
        const auto expected = brute_force(costs, o);
        SCOPED_TRACE("trial " + std::to_string(trial) + ", " + std::to_string(L) + " layers, " +
                     std::to_string(o.stages) + " stages");
        if (!expected) {
            ++infeasible;
            EXPECT_THROW(best_partition(costs, o), ConfigError);
            continue;
        }
        ++feasible;
        const Partition p = best_partition(costs, o);
        EXPECT_EQ(p.cuts, *expected);
        EXPECT_TRUE(p.fits());
    }
    // The random caps exercise both outcomes.
    EXPECT_GT(feasible, 100);
    EXPECT_GT(infeasible, 20);
}

TEST(Partitioner, RealTimesMatchBruteForceBottleneck) {
    for (std::uint64_t trial = 0; trial < 200; ++trial) {
        const std::uint64_t key = rng_key(777, trial);
        const std::size_t L = 1 + rng_bits(key, 0) % 10;
        const auto costs = random_costs(key, L, true);
        PartitionOptions o = random_options(rng_key(key, 1), L);
        o.caps = {kGiB};
        const auto expected = brute_force(costs, o);
        ASSERT_TRUE(expected.has_value());
        EXPECT_EQ(best_partition(costs, o).slowest_ms(),
                  evaluate_partition(costs, *expected, o).slowest_ms())
            << "trial " << trial;
    }
}

TEST(Partitioner, TiesPreferBalanceThenEarliestCuts) {
    // {1,1,1} in 2 stages: both splits are 2 ms slowest and equally balanced: the earlier cut.
    EXPECT_EQ(best_partition(timed({1, 1, 1}), options(2)).cuts, (std::vector<std::size_t>{1}));
    // {5,1,1,2,2} in 3: every split whose slowest stage is 5 ms starts [5]; [1,1][2,2] and
    // [1,1,2][2] square-sum to 20, [1][1,2,2] to 26: the earliest of the balanced ones.
    const Partition p = best_partition(timed({5, 1, 1, 2, 2}), options(3));
    EXPECT_EQ(p.cuts, (std::vector<std::size_t>{1, 3}));
    EXPECT_DOUBLE_EQ(p.slowest_ms(), 5);
    EXPECT_EQ(p.slowest, 0u);
}

TEST(Partitioner, MemoryCapMovesTheCut) {
    // Balanced by time: [l1 l2][l3 l4]. l2 carries 600 B of weights (x3 with gradients and
    // momentum): with a 1 KiB cap on the first device only, l2 must go to the second.
    auto costs = timed({3, 3, 3, 3});
    costs[1].parameter_bytes = 600;
    costs[1].optimizer_bytes = 600;
    PartitionOptions o = options(2);
    EXPECT_EQ(best_partition(costs, o).cuts, (std::vector<std::size_t>{2}));
    o.caps = {1024, 4096};
    const Partition p = best_partition(costs, o);
    EXPECT_EQ(p.cuts, (std::vector<std::size_t>{1}));
    EXPECT_DOUBLE_EQ(p.slowest_ms(), 9);
    EXPECT_EQ(p.slowest, 1u);
    EXPECT_EQ(p.stages[1].memory.total(), 1800u);
    EXPECT_TRUE(p.fits());
    // And activations under the schedule count: 1F1B lets the first stage hold fewer.
    auto acts = timed({3, 3, 3, 3});
    for (auto& c : acts) c.input_bytes = 100;
    PartitionOptions a = options(2, 500);
    a.micro_batches = 4;
    // GPipe: a stage holds 4 x 100 B per layer, so neither may take two layers.
    EXPECT_THROW(best_partition(acts, a), ConfigError);
    a.schedule = PipelineSchedule::one_f_one_b;
    EXPECT_EQ(best_partition(acts, a).cuts, (std::vector<std::size_t>{2}));  // 2 x 200, 1 x 200
    a.schedule = PipelineSchedule::gpipe;
    a.recompute = {true};
    EXPECT_EQ(best_partition(acts, a).cuts, (std::vector<std::size_t>{2}));  // 4 x 100 + 100
}

TEST(Partitioner, InfeasibleSaysWhatEachStageNeeds) {
    auto costs = timed({1, 1, 1});
    for (auto& c : costs) {
        c.parameter_bytes = 1024;
        c.input_bytes = 2048;
    }
    PartitionOptions o = options(2, 4096);
    o.micro_batches = 2;
    const std::string text = error_text<ConfigError>([&] { best_partition(costs, o); });
    EXPECT_NE(text.find("no split of 3 layers into 2 stages fits"), std::string::npos) << text;
    EXPECT_NE(text.find("stage 1 (l1): needs 6.0 KiB of a 4.0 KiB cap"), std::string::npos) << text;
    EXPECT_NE(text.find("stage 2 (l2..l3)"), std::string::npos) << text;
    EXPECT_NE(text.find("over"), std::string::npos) << text;
    EXPECT_NE(text.find("more stages"), std::string::npos) << text;
    EXPECT_NE(text.find("1f1b"), std::string::npos) << text;
    EXPECT_NE(text.find("recomputation"), std::string::npos) << text;
}

TEST(Partitioner, BadOptions) {
    EXPECT_NE(error_text<ConfigError>([] {
                  best_partition(timed({1, 1}), options(3));
              }).find("2 top-level layers into 3 stages"),
              std::string::npos);
    PartitionOptions o = options(2);
    o.caps = {1, 2, 3};
    EXPECT_THROW(best_partition(timed({1, 1}), o), ConfigError);
    o = options(2);
    o.recompute = {true, false, true};
    EXPECT_THROW(best_partition(timed({1, 1}), o), ConfigError);
    o = options(2);
    o.micro_batches = 0;
    EXPECT_THROW(best_partition(timed({1, 1}), o), ConfigError);
    EXPECT_THROW(evaluate_partition(timed({1, 1, 1}), {2, 1}, options(3)), ConfigError);
    EXPECT_THROW(evaluate_partition(timed({1, 1, 1}), {3}, options(2)), ConfigError);
}

TEST(Partitioner, ParseManualCuts) {
    const std::vector<std::string> names{"conv1", "relu1", "pool1", "conv2", "fc1", "fc2"};
    EXPECT_EQ(parse_cuts({std::string("pool1")}, names, 2), (std::vector<std::size_t>{3}));
    EXPECT_EQ(parse_cuts({std::int64_t(3), std::string("fc1")}, names, 3),
              (std::vector<std::size_t>{3, 5}));
    EXPECT_EQ(parse_cuts({std::int64_t(1), std::int64_t(5)}, names, 3),
              (std::vector<std::size_t>{1, 5}));
    EXPECT_TRUE(parse_cuts({}, names, 1).empty());

    auto text = [&](std::vector<CutSpec> specs, int stages) {
        return error_text<ConfigError>([&] { parse_cuts(specs, names, stages); });
    };
    const std::string unknown = text({std::string("conv9")}, 2);
    EXPECT_NE(unknown.find("unknown layer 'conv9'"), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("conv1, relu1, pool1, conv2, fc1, fc2"), std::string::npos) << unknown;
    EXPECT_NE(text({std::int64_t(0)}, 2).find("index 0 is out of range"), std::string::npos);
    EXPECT_NE(text({std::int64_t(6)}, 2).find("cut after layer 1..5"), std::string::npos);
    EXPECT_NE(text({std::string("fc2")}, 2).find("last layer"), std::string::npos);
    const std::string order = text({std::string("fc1"), std::int64_t(2)}, 3);
    EXPECT_NE(order.find("cuts must increase"), std::string::npos) << order;
    EXPECT_NE(order.find("'fc1'"), std::string::npos) << order;
    EXPECT_NE(text({std::int64_t(3), std::int64_t(3)}, 3).find("cuts must increase"),
              std::string::npos);
    EXPECT_NE(text({std::int64_t(3)}, 3).find("1 cut for 3 stages (need 2"), std::string::npos);
    EXPECT_NE(text({std::int64_t(1), std::int64_t(2)}, 2).find("2 cuts for 2 stages"),
              std::string::npos);
}

TEST(Partitioner, TableShowsStagesAndSlowest) {
    auto costs = timed({1, 2, 3, 4});
    costs[0].name = "conv1";
    costs[3].name = "fc2";
    costs[1].output_bytes = 3 * 1024;
    costs[0].parameter_bytes = 2048;
    PartitionOptions o = options(2, 1024 * 1024);
    o.schedule = PipelineSchedule::one_f_one_b;
    o.micro_batches = 4;
    const Partition p = evaluate_partition(
        costs, parse_cuts({std::int64_t(2)}, {"conv1", "l2", "l3", "fc2"}, 2), o);
    const std::string table = format_partition(p, costs);
    EXPECT_NE(table.find("into 2 stages (1f1b, 4 micro-batches"), std::string::npos) << table;
    EXPECT_NE(table.find("conv1..l2"), std::string::npos) << table;
    EXPECT_NE(table.find("2 *"), std::string::npos) << table;  // l3..fc2, 7 ms
    EXPECT_NE(table.find("l3..fc2"), std::string::npos) << table;
    EXPECT_NE(table.find("3.0 KiB"), std::string::npos) << table;  // what stage 1 sends
    EXPECT_NE(table.find("2.0 KiB"), std::string::npos) << table;  // conv1's weights
    EXPECT_NE(table.find("/ 1.0 MiB"), std::string::npos) << table;
    EXPECT_NE(table.find("slowest stage: 2, 7.000 ms"), std::string::npos) << table;
    EXPECT_EQ(table.find("over cap"), std::string::npos) << table;
    o.caps = {1024};
    EXPECT_NE(format_partition(evaluate_partition(costs, {2}, o), costs).find("over cap"),
              std::string::npos);
}

TEST(Partitioner, ProfiledNetOnCpu) {
    // Declared first: the net's tensors live in the device's memory, so it must outlive them.
    CpuDevice device(0, CpuDeviceOptions{std::size_t(256) << 20, 1});
    Conv2dOptions c;
    c.in_channels = 3, c.out_channels = 8, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    Conv2dOptions c2 = c;
    c2.in_channels = 8;
    Pool2dOptions pool;
    pool.kernel_h = pool.kernel_w = 2;
    Sequential net({std::make_shared<Conv2d>(c), std::make_shared<ReLU>(),
                    std::make_shared<MaxPool2d>(pool), std::make_shared<Conv2d>(c2),
                    std::make_shared<ReLU>(), std::make_shared<Flatten>(),
                    std::make_shared<Linear>(LinearOptions{8 * 4 * 4, 16, true, "kaiming"}),
                    std::make_shared<ReLU>(),
                    std::make_shared<Linear>(LinearOptions{16, 5, true, "kaiming"})});
    net.initialize(3);
    CrossEntropy loss;
    ProfileOptions po;
    po.warmup = 1;
    po.iterations = 3;
    // As recipes run it. (Contiguous convolutions on a worker thread show a leak inside
    // oneDNN under LeakSanitizer, outside what this test is about.)
    po.layout = Layout::channels_last;
    const NetProfile profile = profile_net(net, loss, device, Shape({3, 8, 8}), 4, po);
    const auto costs = layer_costs(profile, true);
    ASSERT_EQ(costs.size(), 9u);
    EXPECT_EQ(costs[0].input_bytes, 4u * 3 * 8 * 8 * sizeof(float));
    EXPECT_EQ(costs[1].input_bytes, costs[0].output_bytes);

    std::vector<std::string> names;
    for (const auto& cost : costs) names.push_back(cost.name);
    for (int stages = 1; stages <= 3; ++stages) {
        PartitionOptions o = options(stages, std::size_t(64) << 20);
        o.schedule = PipelineSchedule::one_f_one_b;
        o.micro_batches = 4;
        const Partition p = best_partition(costs, o);
        ASSERT_EQ(p.cuts.size(), std::size_t(stages - 1));
        EXPECT_TRUE(p.fits());
        std::size_t weights = 0, begin = 0;
        double slowest = 0;
        for (const auto& st : p.stages) {
            EXPECT_EQ(st.begin, begin);
            EXPECT_LT(st.begin, st.end);
            begin = st.end;
            weights += st.memory.weights;
            slowest = std::max(slowest, st.time_ms);
        }
        EXPECT_EQ(begin, costs.size());
        EXPECT_EQ(weights, std::size_t(parameter_count(net)) * sizeof(float));
        EXPECT_EQ(p.slowest_ms(), slowest);
        const auto expected = brute_force(costs, o);
        ASSERT_TRUE(expected.has_value());
        EXPECT_EQ(p.slowest_ms(), evaluate_partition(costs, *expected, o).slowest_ms());
        // The chosen cuts, spelled as names, parse back to themselves.
        std::vector<CutSpec> specs;
        for (std::size_t cut : p.cuts) specs.push_back(names[cut - 1]);
        EXPECT_EQ(parse_cuts(specs, names, stages), p.cuts);
        EXPECT_NE(format_partition(p, costs).find("conv1"), std::string::npos);
    }
}

}  // namespace
}  // namespace tandem::test

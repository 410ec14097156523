// The simulator on cases worked out by hand, and the planner's promises: the pipeline formula
// (M + S - 1) t, a link shared by two copies, all-reduce exposure, the update after the barrier,
// CPU devices sharing cores, and no plan over a device's memory.
#include <gtest/gtest.h>

#include <set>

#include "base/error.h"
#include "plan/planner.h"
#include "plan/simulator.h"
#include "plan/stage_cost.h"
#include "support/cpu_topology.h"

namespace tandem::test {
namespace {

// Every layer costs the same per sample: forward f ms, backward b ms, `act` bytes a sample,
// `weights` bytes of parameters.
class TableCosts : public CostModel {
public:
    TableCosts(int layers, double f, double b, std::size_t act, std::size_t weights,
               double loss = 0, double update = 0)
        : layers_(layers), f_(f), b_(b), act_(act), weights_(weights), loss_(loss),
          update_(update) {}
    std::vector<LayerCost> layer_costs(const TopologyDevice&, std::int64_t batch) const override {
        std::vector<LayerCost> costs;
        const auto n = static_cast<std::size_t>(batch);
        for (int i = 0; i < layers_; ++i) {
            LayerCost c;
            c.name = "layer" + std::to_string(i + 1);
            c.forward_ms = f_ * double(batch), c.backward_ms = b_ * double(batch);
            c.parameter_bytes = weights_, c.optimizer_bytes = weights_;
            c.input_bytes = c.output_bytes = act_ * n;
            costs.push_back(c);
        }
        return costs;
    }
    double loss_ms(const TopologyDevice&, std::int64_t) const override { return loss_; }
    double update_ms(const TopologyDevice&, std::int64_t, std::size_t bytes,
                     std::size_t) const override {
        return weights_ == 0 ? 0
                             : update_ * double(bytes) / double(weights_ * std::size_t(layers_));
    }
    double copy_gbs() const override { return 1e9; }  // copies between CPU devices: free
    double handoff_ms() const override { return 0; }

private:
    int layers_;
    double f_, b_;
    std::size_t act_, weights_;
    double loss_, update_;
};

// Four V100s, two under each of two switches joined by a root complex.
Topology gpus() {
    TopologySpec spec;
    spec.name = "gpus";
    spec.nodes.push_back({"root", "", "", "", 0, 1, 0});
    for (int w = 0; w < 2; ++w) {
        const std::string sw = "switch" + std::to_string(w);
        spec.nodes.push_back({sw, "root", "pcie3_x16", "", 0, 1, 0});
        for (int g = 0; g < 2; ++g)
            spec.nodes.push_back(
                {"gpu" + std::to_string(2 * w + g), sw, "pcie3_x16", "V100", 0, 1, 0});
    }
    return Topology(spec);
}

Plan plan(int groups, int stages, int micro, std::int64_t batch, std::vector<std::size_t> cuts,
          PipelineSchedule schedule = PipelineSchedule::gpipe) {
    Plan p;
    p.groups = groups, p.stages = stages, p.micro_batches = micro, p.batch = batch,
    p.cuts = std::move(cuts);
    p.schedule = schedule;
    return p;
}

double span_start(const Simulation& s, const std::string& track, const std::string& name,
                  int micro) {
    for (const auto& e : s.events) {
        if (e.track != track || e.name != name) continue;
        for (const auto& a : e.args)
            if (a.key == "micro_batch" && std::get<std::int64_t>(a.value) == micro)
                return e.start_us / 1e3;
    }
    ADD_FAILURE() << "no span " << name << " micro-batch " << micro << " on " << track;
    return -1;
}

TEST(Simulator, OneStageRunsItsMicroBatchesBackToBack) {
    const Topology t = cpu_topology(1, 4);
    const TableCosts costs(3, 0.5, 1.0, 100, 1000, 0.25, 2.0);
    // Batch 8 in 2 micro-batches of 4: each 3 layers x 4 samples x (0.5 + 1.0) ms + 0.25 ms loss.
    const Simulation s = simulate(plan(1, 1, 2, 8, {}), t, costs);
    EXPECT_NEAR(s.step_ms, 2 * (3 * 4 * 1.5 + 0.25) + 2.0, 1e-9);
    EXPECT_NEAR(s.images_per_s, 8 * 1e3 / s.step_ms, 1e-9);
    EXPECT_NEAR(s.bubble, 0, 1e-12);
    EXPECT_NEAR(s.update_ms, 2.0, 1e-9);
    // Weights, gradients, momentum; activations of both micro-batches (GPipe) at the peak.
    EXPECT_EQ(s.devices[0].memory.weights, 3000u);
    EXPECT_GE(s.devices[0].peak_bytes, 3 * 3000u + 2 * 3 * 400u);
}

TEST(Simulator, EqualStagesTakeMPlusSMinusOneSlots) {
    // S stages of one layer each, t = f + b per micro-batch and stage: (M + S - 1) t, both
    // schedules.
    const TableCosts costs(4, 1.0, 2.0, 10, 0);
    for (const auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
        for (const int m : {1, 4, 8}) {
            const Topology t = cpu_topology(4, 4);
            const Simulation s = simulate(plan(1, 4, m, m, {1, 2, 3}, schedule), t, costs, true);
            EXPECT_NEAR(s.step_ms, (m + 4 - 1) * 3.0, 1e-9)
                << pipeline_schedule_name(schedule) << " M=" << m;
            EXPECT_NEAR(s.bubble, 1 - double(m) / (m + 3), 1e-9);
        }
    }
}

TEST(Simulator, CpuDevicesOverTheirCoresSlowDown) {
    // Two one-thread devices, data parallel, no weights: on 2 cores they run side by side, on
    // one core each at half speed.
    const TableCosts costs(2, 1.0, 1.0, 10, 0);
    const Simulation side_by_side = simulate(plan(2, 1, 1, 4, {}), cpu_topology(2, 2), costs);
    EXPECT_NEAR(side_by_side.step_ms, 2 * 2 * 2.0, 1e-9);
    EXPECT_EQ(side_by_side.crowded_ms, 0);
    // On one core, every moment has more busy threads than cores: crowded for the whole step.
    const Simulation shared = simulate(plan(2, 1, 1, 4, {}), cpu_topology(2, 1), costs);
    EXPECT_NEAR(shared.step_ms, 2 * 2 * 2.0 * 2, 1e-9);
    EXPECT_NEAR(shared.crowded_ms, shared.step_ms, 1e-9);
    // Two-thread devices on 2 cores: half speed as well.
    EXPECT_NEAR(simulate(plan(2, 1, 1, 4, {}), cpu_topology(2, 2, 2), costs).step_ms, 16.0, 1e-9);
}

// More one-thread workers than cores: a receiver woken while its sender goes on working waits,
// one wake-up in `cores`, until the sender blocks or for a woken worker's wait for a busy core.
TEST(Simulator, AReceiverWokenBesideASenderThatGoesOnWaitsOnItsCore) {
    class CrowdedWakeUps final : public TableCosts {
    public:
        CrowdedWakeUps() : TableCosts(3, 0.5, 1.0, 10, 0) {}
        double crowded_handoff_ms() const override { return 0.8; }
    };
    const CrowdedWakeUps costs;
    // Three stages of one layer, two micro-batches of 4 samples: each forward 2 ms.
    const Plan p = plan(1, 3, 2, 8, {1, 2});
    const Simulation roomy = simulate(p, cpu_topology(3, 3), costs, true);
    const Simulation crowded = simulate(p, cpu_topology(3, 2), costs, true);
    // Stage 0 goes on with micro-batch 1 after handing micro-batch 0 on: stage 1 starts it
    // min(0.8, 2 ms of work ahead) / 2 cores later than when every worker has a core.
    EXPECT_NEAR(span_start(roomy, "cpu:1", "forward", 0), 2.0, 1e-9);
    EXPECT_NEAR(span_start(crowded, "cpu:1", "forward", 0), 2.0 + 0.8 / 2, 1e-9);
    EXPECT_GT(crowded.step_ms, roomy.step_ms);
    // One micro-batch: after its forward stage 0 waits for the gradient, so it blocks, and
    // stage 1 wakes at once on the core it leaves.
    const Simulation blocked = simulate(plan(1, 3, 1, 4, {1, 2}), cpu_topology(3, 2), costs, true);
    EXPECT_NEAR(span_start(blocked, "cpu:1", "forward", 0), 2.0, 1e-9);
}

// CPU devices: the engine copies a bucket's gradients into one flat buffer, reduces it and
// copies the sum back out; the simulated all-reduce is the cost model's reduce and those two
// copies at the copy rate.
TEST(Simulator, CpuBucketsAreCopiedInAndOutAroundTheirReduce) {
    class SlowCopies final : public TableCosts {
    public:
        using TableCosts::TableCosts;
        double copy_gbs() const override { return 1.0; }  // a MB a millisecond
    };
    const std::size_t weights = std::size_t(4) << 20;  // one layer's: one bucket
    const SlowCopies costs(1, 1.0, 1.0, 10, weights);
    Plan p = plan(2, 1, 1, 4, {});
    p.overlap_backward = false;
    const Simulation s = simulate(p, cpu_topology(2, 2), costs);
    const double reduce = costs.cpu_all_reduce_ms(weights, 2, p.algorithm);
    ASSERT_GT(reduce, 0);
    EXPECT_NEAR(s.exposed_comm_ms, reduce + 2 * double(weights) / 1e6, 1e-6);
}

// One CPU device, four micro-batches: GPipe keeps all four's activations until its backwards,
// and with a cache that holds one micro-batch's, every forward and backward but the first
// forward and the last backward finds others in flight, and its own activations go out to
// memory and back: a copy of them each. 1F1B keeps one at a time and pays nothing; nor does
// GPipe where the four fit in the cache, nor what one micro-batch alone did not fit (the
// profile timed that).
TEST(Simulator, MicroBatchesInFlightBeyondTheCacheSpillTheirActivations) {
    class Cached final : public TableCosts {
    public:
        Cached(std::size_t cache) : TableCosts(2, 1.0, 2.0, 1 << 20, 0), cache_(cache) {}
        double copy_gbs() const override { return 1.0; }  // a MB a millisecond
        std::size_t cache_bytes() const override { return cache_; }

    private:
        std::size_t cache_;
    };
    const Topology t = cpu_topology(1, 1);
    const auto step = [&](std::size_t cache, PipelineSchedule schedule) {
        return simulate(plan(1, 1, 4, 16, {}, schedule), t, Cached(cache)).step_ms;
    };
    const std::size_t own =
        StageCosts(Cached(0).layer_costs(t.device(0), 4)).memory(0, 2, 1, false).activations;
    ASSERT_GT(own, 0u);
    const double hot = step(0, PipelineSchedule::gpipe);
    EXPECT_NEAR(step(0, PipelineSchedule::one_f_one_b), hot, 1e-9);
    EXPECT_NEAR(step(own, PipelineSchedule::one_f_one_b), hot, 1e-9);
    EXPECT_NEAR(step(own, PipelineSchedule::gpipe), hot + 2 * 3 * double(own) / 1e6, 1e-9);
    EXPECT_NEAR(step(1, PipelineSchedule::one_f_one_b), hot, 1e-9);
    EXPECT_NEAR(step(std::size_t(1) << 30, PipelineSchedule::gpipe), hot, 1e-9);
}

TEST(Simulator, CopiesSharingAChannelWaitForEachOther) {
    // Two groups of two stages, no weights (no all-reduce). Stage 0 of both groups on switch 0,
    // stage 1 on switch 1: both activations cross switch0 -> root -> switch1 at once, and the
    // second lands one transfer later. With each group under its own switch, both land together.
    const Topology t = gpus();
    const TableCosts costs(2, 0.001, 0.002, std::size_t(12) << 20, 0);
    Plan shared = plan(2, 2, 1, 2, {1});
    shared.devices = {0, 2, 1, 3};
    const Simulation s = simulate(shared, t, costs, true);
    const double copy = t.copy_ms(0, 2, std::size_t(12) << 20);
    // Forward of one layer on one sample: the roofline of a V100 (0.001 ms is in the table).
    const double forward = 0.001;
    const double first = span_start(s, "gpu2", "forward", 0);
    const double second =
        span_start(s, "gpu3", "forward", 0);  // micro-batches count within a group
    // The second waits for the first's bytes through the shared channels, not for its latency.
    const double through = double(std::size_t(12) << 20) / (12.0 * 1e6);
    EXPECT_NEAR(first, forward + copy, 1e-9);
    EXPECT_NEAR(second, forward + copy + through, 1e-9);

    Plan apart = shared;
    apart.devices = {0, 1, 2, 3};
    const Simulation a = simulate(apart, t, costs, true);
    EXPECT_NEAR(span_start(a, "gpu1", "forward", 0),
                forward + t.copy_ms(0, 1, std::size_t(12) << 20), 1e-9);
    EXPECT_NEAR(span_start(a, "gpu3", "forward", 0),
                forward + t.copy_ms(2, 3, std::size_t(12) << 20), 1e-9);
}

TEST(Simulator, AllReduceOverlapsEarlierStagesAndTheRestIsExposed) {
    // Two groups x two stages on GPUs, the replicas of a stage under one switch, buckets after
    // each stage's last backward: stage 1's all-reduce starts after its last backward, while
    // stage 0 still runs backward; stage 0's is exposed: one bucket (a layer's 48 MiB are one
    // gradient, larger than a bucket), a ring of 2 steps of half of it.
    const Topology t = gpus();
    const std::size_t weights = std::size_t(48) << 20;
    const TableCosts costs(2, 1.0, 2.0, 1000, weights);
    Plan p = plan(2, 2, 2, 4, {1});
    p.overlap_backward = false;
    p.devices = {0, 2, 1, 3};
    const Simulation s = simulate(p, t, costs, true);
    auto ring_ms = [&](int a, int b) { return 2 * t.copy_ms(a, b, weights / 2); };
    EXPECT_NEAR(s.exposed_comm_ms, ring_ms(0, 1), 1e-6);
    bool stage1_overlaps = false;
    for (const auto& e : s.events)
        if (e.track == "gpu2 all-reduce" && e.start_us / 1e3 < s.compute_ms) stage1_overlaps = true;
    EXPECT_TRUE(stage1_overlaps)
        << "stage 1's all-reduce should start while stage 0 is in backward";
    EXPECT_NEAR(s.step_ms, s.compute_ms + s.exposed_comm_ms + s.update_ms, 1e-9);

    // Replicas across the switches: both stages' all-reduces cross switch0 -> root -> switch1,
    // so stage 0's waits for what is left of stage 1's before it can start.
    p.devices = {0, 1, 2, 3};
    const Simulation shared = simulate(p, t, costs, true);
    EXPECT_GT(shared.exposed_comm_ms, ring_ms(0, 2) + 1.0);
}

// In fp16 a Tandem run scales its loss (loss_scale 'auto'), so every device's program holds the
// unscale pass before the barrier, as the engine's does; in fp32 none.
TEST(Simulator, Fp16ProgramsUnscaleTheirGradients) {
    class HalfCosts final : public TableCosts {
    public:
        using TableCosts::TableCosts;
        Precision precision() const override { return Precision::fp16; }
    };
    const Topology t = gpus();
    Plan p = plan(2, 2, 2, 8, {2});
    p.devices = {0, 1, 2, 3};
    const auto unscales = [&](const CostModel& costs) {
        std::set<std::string> tracks;
        for (const auto& e : simulate(p, t, costs, true).events)
            if (e.name == "unscale gradients") tracks.insert(e.track);
        return tracks.size();
    };
    EXPECT_EQ(unscales(HalfCosts(4, 1.0, 2.0, 1000, 1 << 20)), 4u);
    EXPECT_EQ(unscales(TableCosts(4, 1.0, 2.0, 1000, 1 << 20)), 0u);
}

TEST(Simulator, BucketsGoDuringTheLastBackward) {
    // Two replicas of a 4-layer net under one switch, a bucket per layer (8 MiB each), one
    // micro-batch of 4: forward 4 x 4 ms, backward 4 x 8 ms. A ring takes 2 copies of 4 MiB,
    // less than a layer's backward, so each bucket is done before the next is ready: the first
    // starts when the last layer's backward ends, and only the last bucket's ring is exposed.
    const Topology t = gpus();
    const std::size_t weights = std::size_t(8) << 20;
    const TableCosts costs(4, 1.0, 2.0, 1000, weights);
    Plan p = plan(2, 1, 1, 8, {});
    p.bucket_bytes = weights;
    p.devices = {0, 1};
    const double ring = 2 * t.copy_ms(0, 1, weights / 2);
    ASSERT_LT(ring, 8.0);
    const Simulation during = simulate(p, t, costs, true);
    double first = 1e300;
    int spans = 0;
    for (const auto& e : during.events)
        if (e.track == "gpu0 all-reduce") first = std::min(first, e.start_us / 1e3), ++spans;
    EXPECT_EQ(spans, 4);
    EXPECT_NEAR(first, 4 * 4.0 + 8.0, 1e-9);
    EXPECT_NEAR(during.compute_ms, 4 * 4.0 + 4 * 8.0, 1e-9);
    EXPECT_NEAR(during.exposed_comm_ms, ring, 1e-6);

    // After the backward: all four rings are exposed, one after another.
    p.overlap_backward = false;
    const Simulation after = simulate(p, t, costs, true);
    EXPECT_NEAR(after.exposed_comm_ms, 4 * ring, 1e-6);
    EXPECT_NEAR(after.step_ms - during.step_ms, 3 * ring, 1e-6);
}

TEST(Simulator, RejectsPlansThatDoNotFit) {
    const Topology t = cpu_topology(2, 2);
    const TableCosts costs(3, 1, 1, 10, 0);
    EXPECT_THROW(simulate(plan(1, 2, 3, 8, {1}), t, costs), ConfigError);  // 8 in 3 micro-batches
    EXPECT_THROW(simulate(plan(1, 3, 1, 8, {1, 2}), t, costs), ConfigError);  // 3 devices of 2
    EXPECT_THROW(simulate(plan(1, 2, 1, 8, {}), t, costs), ConfigError);      // no cut
    EXPECT_THROW(simulate(plan(1, 2, 1, 8, {3}), t, costs), ConfigError);     // cut past the end
}

TEST(Simulator, AGpuKeepsCudnnsWorkspaceBudgetBesideTheNet) {
    // V100s of 32 GiB: cuDNN's default budget is a sixteenth, 2 GiB (device_schema.h); a CPU
    // device keeps nothing beside the net.
    const std::size_t gib = std::size_t(1) << 30;
    const Topology g = gpus(), c = cpu_topology(1, 2, 1, 32 * gib);
    EXPECT_EQ(g.device(0).kernel_reserve_bytes(), 2 * gib);
    EXPECT_EQ(g.device(0).usable_bytes(), 30 * gib);
    EXPECT_EQ(c.device(0).kernel_reserve_bytes(), 0u);
    EXPECT_EQ(c.device(0).usable_bytes(), 32 * gib);
    const TableCosts costs(3, 0.5, 1.0, 100, 1000, 0.25, 2.0);
    const Simulation on_gpu = simulate(plan(1, 1, 1, 8, {}), g, costs);
    const Simulation on_cpu = simulate(plan(1, 1, 1, 8, {}), c, costs);
    EXPECT_EQ(on_gpu.devices[0].peak_bytes, on_cpu.devices[0].peak_bytes + 2 * gib);
}

TEST(Planner, FillsAGpuOnlyToItsCapLessTheWorkspaceBudget) {
    // Three layers of 3.5 GiB weights (10.5 GiB with gradient and momentum): 31.5 GiB on one
    // device fits 32 GiB of memory but not the 30 GiB left beside cuDNN's 2 GiB.
    const std::size_t gib = std::size_t(1) << 30;
    const TableCosts costs(3, 0.1, 0.2, 1000, 7 * gib / 2, 0.1, 1.0);
    PlannerOptions o;
    o.batch = 8;
    const PlanSearch on_cpus = search_plans(cpu_topology(4, 4, 1, 32 * gib), costs, o);
    EXPECT_NE(on_cpus.pure_data_parallel(), nullptr);
    const PlanSearch on_gpus = search_plans(gpus(), costs, o);
    ASSERT_FALSE(on_gpus.plans.empty());
    EXPECT_EQ(on_gpus.pure_data_parallel(), nullptr);
    for (const auto& r : on_gpus.plans)
        for (const auto& d : r.simulation.devices)
            EXPECT_LE(d.peak_bytes, 32 * gib) << r.plan.label() << " " << d.name;
}

// What the search asks to be measured up front.
class PrefetchLog final : public TableCosts {
public:
    PrefetchLog() : TableCosts(4, 0.1, 0.2, 100, 0) {}
    void prefetch(const TopologyDevice&, std::vector<std::int64_t> batches) const override {
        sizes.insert(sizes.end(), batches.begin(), batches.end());
    }
    mutable std::vector<std::int64_t> sizes;
};

// A layout of one stage tries more micro-batches only when fewer did not fit, so only a
// pipeline's micro-batch sizes are measured ahead (each profile of a size costs seconds).
TEST(Planner, MeasuresAheadOnlyTheMicroBatchesALayoutTries) {
    PlannerOptions o;
    o.batch = 32;
    const PrefetchLog one;
    search_plans(cpu_topology(1, 2, 2), one, o);
    EXPECT_EQ(one.sizes, (std::vector<std::int64_t>{1, 32}));
    const PrefetchLog two;
    search_plans(cpu_topology(2, 2, 1), two, o);
    EXPECT_EQ(two.sizes, (std::vector<std::int64_t>{1, 32, 16, 8, 4, 2, 1, 16}));
}

TEST(Planner, NeverReturnsAPlanOverACap) {
    // 8 layers of 4 MiB weights (12 MiB with gradient and momentum) and 1 MiB a sample of
    // activations, on 4 devices of 64 MiB: pure data parallel cannot hold the weights.
    const std::size_t mib = std::size_t(1) << 20;
    const Topology t = cpu_topology(4, 4, 1, 64 * mib);
    const TableCosts costs(8, 0.1, 0.2, mib, 4 * mib, 0.1, 1.0);
    PlannerOptions o;
    o.batch = 16;
    o.simpler_within = 0;  // by prediction alone: ranked fastest first
    const PlanSearch search = search_plans(t, costs, o);
    ASSERT_FALSE(search.plans.empty());
    EXPECT_GT(search.over_memory, 0);
    EXPECT_EQ(search.pure_data_parallel(), nullptr);
    for (const auto& r : search.plans) {
        EXPECT_TRUE(r.simulation.fits()) << r.plan.label();
        for (const auto& d : r.simulation.devices)
            EXPECT_LE(d.peak_bytes, 64 * mib) << r.plan.label() << " " << d.name;
    }
    for (std::size_t i = 1; i < search.plans.size(); ++i)
        EXPECT_GE(search.plans[i - 1].simulation.images_per_s,
                  search.plans[i].simulation.images_per_s);
    const std::string table = format_plans(search);
    EXPECT_NE(table.find("pure data parallel: no plan fits"), std::string::npos) << table;
    const std::string lua = plan_to_lua(search.plans.front(), search);
    EXPECT_NE(lua.find("groups = " + std::to_string(search.plans.front().plan.groups)),
              std::string::npos)
        << lua;
}

// A ranked plan of batch 64 predicted at `images_per_s`, with more busy threads than cores for
// `crowded` of its step.
RankedPlan predicted(int stages, int micro_batches, bool recompute, double images_per_s,
                     double crowded = 0, int groups = 1) {
    RankedPlan r;
    r.plan.groups = groups, r.plan.stages = stages, r.plan.micro_batches = micro_batches;
    r.plan.recompute = recompute;
    r.simulation.images_per_s = images_per_s;
    r.simulation.step_ms = 64e3 / images_per_s;
    r.simulation.crowded_ms = crowded * r.simulation.step_ms;
    return r;
}

std::string order(const std::vector<RankedPlan>& plans) {
    std::string labels;
    for (const auto& r : plans) labels += (labels.empty() ? "" : ", ") + r.plan.label();
    return labels;
}

TEST(Planner, RanksASimplerLayoutFirstUnlessAComplexOneLeadsByMore) {
    // A pipeline 5% ahead of one device: the device first; 20% ahead: the pipeline first.
    std::vector<RankedPlan> close{predicted(1, 1, false, 1000), predicted(2, 8, false, 1050)};
    rank_plans(close, 0.1);
    EXPECT_EQ(order(close), "1x1x1, 1x2x8 gpipe");
    std::vector<RankedPlan> far{predicted(1, 1, false, 1000), predicted(2, 8, false, 1200)};
    rank_plans(far, 0.1);
    EXPECT_EQ(order(far), "1x2x8 gpipe, 1x1x1");
    // Within the margin: fewer stages, then fewer micro-batches, then no recomputation; each
    // time within the margin of the fastest plan left.
    std::vector<RankedPlan> many{predicted(2, 8, false, 1000), predicted(2, 4, false, 960),
                                 predicted(2, 4, true, 970), predicted(1, 2, false, 850),
                                 predicted(4, 2, false, 1040)};
    rank_plans(many, 0.1);
    EXPECT_EQ(order(many), "1x2x4 gpipe, 1x2x4 gpipe recompute, 1x2x8 gpipe, 1x4x2 gpipe, 1x1x2");
    // 0: by prediction alone (and equal predictions simplest first).
    rank_plans(many, 0);
    EXPECT_EQ(order(many), "1x4x2 gpipe, 1x2x8 gpipe, 1x2x4 gpipe recompute, 1x2x4 gpipe, 1x1x2");
}

TEST(Planner, RanksALayoutWithinTheCoresAboveACrowdedOne) {
    // Four one-thread devices on two cores: data parallel keeps all four busy (crowded for 95%
    // of its step), two groups of two stages two (6%, at the turns). Predicted 5% apart, the
    // uncrowded pipeline goes first though it has more stages; 20% apart, the prediction wins.
    // A quarter of the step is the line.
    std::vector<RankedPlan> close{predicted(1, 1, false, 1050, 0.95, 4),
                                  predicted(2, 1, false, 1000, 0.06, 2)};
    rank_plans(close, 0.1);
    EXPECT_EQ(order(close), "2x2x1 gpipe, 4x1x1");
    std::vector<RankedPlan> far{predicted(1, 1, false, 1200, 0.95, 4),
                                predicted(2, 1, false, 1000, 0.06, 2)};
    rank_plans(far, 0.1);
    EXPECT_EQ(order(far), "4x1x1, 2x2x1 gpipe");
    std::vector<RankedPlan> line{predicted(1, 1, false, 1050, 0.24, 4),
                                 predicted(2, 1, false, 1000, 0.06, 2)};
    rank_plans(line, 0.1);
    EXPECT_EQ(order(line), "4x1x1, 2x2x1 gpipe");
}

TEST(Planner, SaysWhyItsFirstPlanIsNotTheFastest) {
    PlanSearch search;
    search.plans = {predicted(1, 1, false, 1000), predicted(2, 8, false, 1050)};
    search.simpler_within = 0;
    rank_plans(search.plans, search.simpler_within);
    EXPECT_EQ(format_plans(search).find("is simpler than"), std::string::npos);
    search.simpler_within = 0.1;
    rank_plans(search.plans, search.simpler_within);
    const std::string table = format_plans(search);
    EXPECT_NE(table.find("#1 is simpler than #2 (fewer stages), which is predicted 5.0% faster: "
                         "less than simpler_within = 10%"),
              std::string::npos)
        << table;
    search.plans = {predicted(1, 1, false, 1050, 0.95, 4), predicted(2, 1, false, 1000, 0, 2)};
    for (RankedPlan& r : search.plans) r.threads = 1;  // one-thread CPU devices
    rank_plans(search.plans, search.simpler_within);
    const std::string crowded = format_plans(search);
    // The table's last column: the share of each step with more busy threads than cores.
    EXPECT_NE(crowded.find("crowded\n"), std::string::npos) << crowded;
    EXPECT_NE(crowded.find("     0%\n"), std::string::npos) << crowded;
    EXPECT_NE(crowded.find("    95%\n"), std::string::npos) << crowded;
    EXPECT_NE(crowded.find("#1 is simpler than #2 (keeps its busy threads within the cores for "
                           "more of the step), which is predicted 5.0% faster"),
              std::string::npos)
        << crowded;
}

TEST(Planner, PrefersDataParallelWhenEverythingFitsAndCommunicationIsFree) {
    const Topology t = cpu_topology(4, 4);
    const TableCosts costs(4, 0.1, 0.2, 100, 0, 0, 0);
    PlannerOptions o;
    o.batch = 32;
    const PlanSearch search = search_plans(t, costs, o);
    ASSERT_FALSE(search.plans.empty());
    EXPECT_EQ(search.plans.front().plan.label(), "4x1x1");
    ASSERT_NE(search.pure_pipeline(), nullptr);
    EXPECT_EQ(search.pure_pipeline()->plan.groups, 1);
}

}  // namespace
}  // namespace tandem::test

// The parallel engine computes what one device computes: G groups x S stages x M micro-batches
// against 1 x 1 x 1 on the whole batch; failures anywhere reach the caller; memory caps.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "base/rng.h"
#include "device/cpu/cpu_device.h"
#include "engine/engine.h"
#include "io/trace.h"
#include "layers/batch_norm2d.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/element_loss.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/pool2d.h"
#include "layers/relu.h"
#include "layers/residual.h"
#include "support/temp_dir.h"
#include "support/toy_batch.h"

namespace tandem::test {
namespace {

Conv2dOptions conv_options(std::int64_t in, std::int64_t out) {
    Conv2dOptions c;
    c.in_channels = in, c.out_channels = out, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    return c;
}

// No batch norm: every split computes the same gradients. Dropout draws by global sample
// index, so it is split-invariant too.
std::shared_ptr<Sequential> plain_net() {
    Pool2dOptions p;
    p.kernel_h = p.kernel_w = 2;
    return std::make_shared<Sequential>(std::vector<LayerPtr>{
        std::make_shared<Conv2d>(conv_options(1, 4)), std::make_shared<ReLU>(),
        std::make_shared<MaxPool2d>(p), std::make_shared<Conv2d>(conv_options(4, 6)),
        std::make_shared<ReLU>(), std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{6 * 4 * 4, 16, true, "kaiming"}),
        std::make_shared<ReLU>(), std::make_shared<Dropout>(0.25f),
        std::make_shared<Linear>(LinearOptions{16, 3, true, "kaiming"})});
}

using test::make_batch;
Batch pipeline_batch(int step) {
    return make_batch(step, 16);
}

std::vector<std::shared_ptr<Device>> pipeline_devices(int n, std::size_t memory = std::size_t(1)
                                                                                  << 30) {
    std::vector<std::shared_ptr<Device>> d;
    for (int i = 0; i < n; ++i)
        d.push_back(std::make_shared<CpuDevice>(i, CpuDeviceOptions{memory, 1}));
    return d;
}

EngineOptions layout_options(int groups, int stages, int micro_batches,
                             PipelineSchedule schedule = PipelineSchedule::gpipe) {
    EngineOptions o;
    o.net = plain_net();
    o.devices = pipeline_devices(groups * stages);
    o.optimizer.sgd = SgdOptions{0.05f, 0.9f, 0.f, 1e-4f, true};
    o.seed = 11;
    o.layout = Layout::channels_last;
    o.parallel.groups = groups, o.parallel.stages = stages,
    o.parallel.micro_batches = micro_batches;
    o.parallel.pipeline = schedule;
    return o;
}

std::map<std::string, std::vector<float>> pipeline_weights(Engine& e) {
    std::map<std::string, std::vector<float>> w;
    for (auto& p : named_parameters(e.net())) w[p.name] = p.parameter->value.to_vector();
    return w;
}

void expect_weights_close(const std::map<std::string, std::vector<float>>& want,
                          const std::map<std::string, std::vector<float>>& got, double rel,
                          const std::string& what) {
    ASSERT_EQ(want.size(), got.size());
    for (const auto& [name, a] : want) {
        const auto& b = got.at(name);
        ASSERT_EQ(a.size(), b.size()) << name;
        double diff = 0, norm = 0;
        for (std::size_t i = 0; i < a.size(); ++i) {
            diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
            norm = std::max(norm, std::abs(double(a[i])));
        }
        // A floor on the scale: a conv_options bias right before batch norm has a zero gradient in
        // exact arithmetic, and what it holds is rounding noise near 1e-8.
        EXPECT_LE(diff, rel * std::max(norm, 1e-3))
            << what << ": " << name << " differs by " << diff << " (max |w| " << norm << ")";
    }
}

std::map<std::string, std::vector<float>> train_pipeline(EngineOptions options, int steps,
                                                         double* loss = nullptr) {
    Engine engine(std::move(options));
    for (int s = 0; s < steps; ++s) {
        const Batch b = pipeline_batch(s);
        const StepResult r = engine.step(b.images, b.labels);
        if (loss) *loss = r.loss;
    }
    return pipeline_weights(engine);
}

TEST(Pipeline, EveryLayoutTrainsLikeOneDevice) {
    double one_loss = 0;
    const auto one = train_pipeline(layout_options(1, 1, 1), 5, &one_loss);
    struct Case {
        int g, s, m;
        PipelineSchedule schedule;
    };
    for (const Case& c :
         {Case{1, 2, 4, PipelineSchedule::gpipe}, Case{2, 1, 1, PipelineSchedule::gpipe},
          Case{2, 2, 4, PipelineSchedule::one_f_one_b},
          Case{1, 4, 8, PipelineSchedule::one_f_one_b}, Case{1, 4, 8, PipelineSchedule::gpipe},
          Case{2, 2, 2, PipelineSchedule::gpipe}}) {
        const std::string what = std::to_string(c.g) + "x" + std::to_string(c.s) + "x" +
                                 std::to_string(c.m) + " " +
                                 std::string(pipeline_schedule_name(c.schedule));
        double loss = 0;
        expect_weights_close(
            one, train_pipeline(layout_options(c.g, c.s, c.m, c.schedule), 5, &loss), 1e-4, what);
        EXPECT_NEAR(loss, one_loss, 1e-4 * std::abs(one_loss)) << what;
    }
}

std::shared_ptr<Sequential> batch_norm_net() {
    Pool2dOptions p;
    p.kernel_h = p.kernel_w = 2;
    return std::make_shared<Sequential>(std::vector<LayerPtr>{
        std::make_shared<Conv2d>(conv_options(1, 4)),
        std::make_shared<BatchNorm2d>(BatchNorm2dOptions{4}), std::make_shared<ReLU>(),
        std::make_shared<MaxPool2d>(p), std::make_shared<Conv2d>(conv_options(4, 6)),
        std::make_shared<BatchNorm2d>(BatchNorm2dOptions{6}), std::make_shared<ReLU>(),
        std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{6 * 4 * 4, 3, true, "kaiming"})});
}

std::map<std::string, std::vector<float>> running_statistics(Engine& e) {
    std::map<std::string, std::vector<float>> w;
    for (auto& b : named_buffers(e.net())) w[b.name] = b.parameter->value.to_vector();
    return w;
}

std::map<std::string, std::vector<float>> weights_and_statistics(Engine& e) {
    auto w = pipeline_weights(e);
    w.merge(running_statistics(e));
    return w;
}

// Deferred batch norm: normalised per micro-batch, but the running statistics are the whole
// batch's, folded once per step. The first batch norm sees the same inputs as on one device,
// so its statistics equal one device's; deeper ones see activations normalised per
// micro-batch, so they equal those of any layout with the same micro-batch size.
TEST(Pipeline, DeferredBatchNormFoldsTheWholeBatch) {
    auto run = [](int g, int s, int m, BatchNormMode mode) {
        EngineOptions o = layout_options(g, s, m);
        o.net = batch_norm_net();
        o.optimizer.sgd.lr = 0;  // pipeline_weights stay put: only the statistics are compared
        o.parallel.batch_norm = mode;
        Engine engine(o);
        const Batch b = pipeline_batch(0);
        engine.step(b.images, b.labels);
        return running_statistics(engine);
    };
    auto first_layer = [](std::map<std::string, std::vector<float>> w) {
        std::erase_if(w, [](const auto& e) { return e.first.rfind("bn1.", 0) != 0; });
        return w;
    };
    const auto one = run(1, 1, 1, BatchNormMode::micro);
    const auto same_micro = run(1, 1, 4, BatchNormMode::deferred);  // micro-batches of 4
    for (auto [g, s, m] : {std::tuple{1, 2, 4}, std::tuple{2, 2, 2}, std::tuple{2, 1, 2}}) {
        const std::string what =
            std::to_string(g) + "x" + std::to_string(s) + "x" + std::to_string(m);
        const auto deferred = run(g, s, m, BatchNormMode::deferred);
        expect_weights_close(first_layer(one), first_layer(deferred), 1e-5,
                             "deferred " + what + " against one device");
        expect_weights_close(same_micro, deferred, 1e-5, "deferred " + what + " against 1x1x4");
        // Per micro-batch, the running statistics move M times: they differ.
        EXPECT_NE(one.at("bn1.running_mean"),
                  run(g, s, m, BatchNormMode::micro).at("bn1.running_mean"))
            << what;
    }
    EXPECT_THROW(parse_batch_norm_mode("global"), ConfigError);
}

// Synchronised batch norm: statistics over the whole global batch, so every layout trains a
// batch-norm net as one device does on the whole batch, running statistics included.
TEST(Pipeline, SyncBatchNormTrainsLikeOneDevice) {
    auto run = [](int g, int s, int m, BatchNormMode mode) {
        EngineOptions o = layout_options(g, s, m);
        o.net = batch_norm_net();
        o.parallel.batch_norm = mode;
        Engine engine(o);
        for (int step = 0; step < 5; ++step)
            engine.step(pipeline_batch(step).images, pipeline_batch(step).labels);
        return weights_and_statistics(engine);
    };
    const auto one = run(1, 1, 1, BatchNormMode::micro);
    for (auto [g, s, m] :
         {std::tuple{1, 2, 4}, std::tuple{2, 1, 1}, std::tuple{2, 2, 4}, std::tuple{1, 4, 8}}) {
        const std::string what =
            std::to_string(g) + "x" + std::to_string(s) + "x" + std::to_string(m);
        expect_weights_close(one, run(g, s, m, BatchNormMode::sync), 1e-4, "sync " + what);
    }
    // Batch norm nested in a residual block's body.
    auto residual_net = [] {
        auto body = std::make_shared<Sequential>(std::vector<LayerPtr>{
            std::make_shared<Conv2d>(conv_options(4, 4)),
            std::make_shared<BatchNorm2d>(BatchNorm2dOptions{4}), std::make_shared<ReLU>(),
            std::make_shared<Conv2d>(conv_options(4, 4)),
            std::make_shared<BatchNorm2d>(BatchNorm2dOptions{4})});
        return std::make_shared<Sequential>(std::vector<LayerPtr>{
            std::make_shared<Conv2d>(conv_options(1, 4)),
            std::make_shared<BatchNorm2d>(BatchNorm2dOptions{4}), std::make_shared<ReLU>(),
            std::make_shared<Residual>(body, nullptr), std::make_shared<ReLU>(),
            std::make_shared<Flatten>(),
            std::make_shared<Linear>(LinearOptions{4 * 8 * 8, 3, true, "kaiming"})});
    };
    auto residual_run = [&](int g, int s, int m, BatchNormMode mode) {
        EngineOptions o = layout_options(g, s, m);
        o.net = residual_net();
        o.parallel.batch_norm = mode;
        Engine engine(o);
        for (int step = 0; step < 3; ++step)
            engine.step(pipeline_batch(step).images, pipeline_batch(step).labels);
        return weights_and_statistics(engine);
    };
    expect_weights_close(residual_run(1, 1, 1, BatchNormMode::micro),
                         residual_run(2, 2, 2, BatchNormMode::sync), 1e-4, "sync residual 2x2x2");

    EngineOptions bad = layout_options(1, 2, 2, PipelineSchedule::one_f_one_b);
    bad.parallel.batch_norm = BatchNormMode::sync;
    EXPECT_THROW(Engine{bad}, ConfigError);
}

// Recomputation gives the same pipeline_weights and holds less memory at its peak.
TEST(Pipeline, RecomputationSameWeightsLessMemory) {
    auto run = [](bool recompute, std::size_t* peak) {
        EngineOptions o = layout_options(1, 2, 4);
        o.net = batch_norm_net();
        o.parallel.recompute = {recompute};
        Engine engine(o);
        for (int s = 0; s < 3; ++s) engine.step(make_batch(s, 64).images, make_batch(s, 64).labels);
        engine.stage_device(0, 0).allocator().reset_peak();
        engine.step(make_batch(3, 64).images, make_batch(3, 64).labels);
        *peak = engine.stage_device(0, 0).allocator().stats().peak;
        return weights_and_statistics(engine);
    };
    std::size_t plain = 0, recomputed = 0;
    const auto a = run(false, &plain), b = run(true, &recomputed);
    for (const auto& [name, w] : a) EXPECT_EQ(w, b.at(name)) << name;
    EXPECT_LT(recomputed, plain) << "peak with recomputation " << recomputed << " B, without "
                                 << plain << " B";
}

// Deterministic mode: the same micro-batch size gives the same bits whatever G and S.
TEST(Pipeline, DeterministicModeIsBitIdenticalAcrossLayouts) {
    auto run = [](int g, int s, int m) {
        EngineOptions o = layout_options(g, s, m, PipelineSchedule::one_f_one_b);
        o.parallel.deterministic = true;
        return train_pipeline(o, 3);
    };
    const auto reference = run(1, 1, 8);  // 16 samples: micro-batches of 2
    for (auto [g, s, m] :
         {std::tuple{2, 1, 4}, std::tuple{1, 2, 8}, std::tuple{2, 2, 4}, std::tuple{4, 1, 2}}) {
        const auto got = run(g, s, m);
        for (const auto& [name, w] : reference)
            EXPECT_EQ(w, got.at(name)) << name << " under " << g << "x" << s << "x" << m;
    }
}

// Model averaging against its definition: each replica trains alone on its shard (its own
// mean gradient and momentum), and every k steps all replicas take the mean of their
// pipeline_weights.
TEST(Pipeline, ModelAveragingFollowsItsDefinition) {
    auto no_dropout = [] {
        Pool2dOptions p;
        p.kernel_h = p.kernel_w = 2;
        return std::make_shared<Sequential>(std::vector<LayerPtr>{
            std::make_shared<Conv2d>(conv_options(1, 4)), std::make_shared<ReLU>(),
            std::make_shared<MaxPool2d>(p), std::make_shared<Flatten>(),
            std::make_shared<Linear>(LinearOptions{4 * 4 * 4, 3, true, "kaiming"})});
    };
    const int groups = 2, every = 2, steps = 5;
    EngineOptions o = layout_options(groups, 1, 2);
    o.net = no_dropout();
    o.parallel.average_every = every;
    Engine averaged(o);

    std::vector<std::unique_ptr<Engine>> alone;
    for (int g = 0; g < groups; ++g) {
        EngineOptions a = layout_options(1, 1, 1);
        a.net = no_dropout();
        alone.push_back(std::make_unique<Engine>(a));
    }
    for (int step = 0; step < steps; ++step) {
        const Batch b = pipeline_batch(step);
        averaged.step(b.images, b.labels);
        for (int g = 0; g < groups; ++g)
            alone[static_cast<std::size_t>(g)]->step(b.images.narrow_batch(8 * g, 8),
                                                     b.labels.narrow_batch(8 * g, 8));
        if ((step + 1) % every) continue;
        auto p0 = named_parameters(alone[0]->net()), p1 = named_parameters(alone[1]->net());
        for (std::size_t i = 0; i < p0.size(); ++i) {
            auto a = p0[i].parameter->value.to_vector(), c = p1[i].parameter->value.to_vector();
            for (std::size_t j = 0; j < a.size(); ++j) a[j] = (a[j] + c[j]) * 0.5f;
            p0[i].parameter->value.copy_from(a);
            p1[i].parameter->value.copy_from(a);
        }
    }
    // Step 5 is past the last average: the replicas differ; group 0's is the engine's net.
    expect_weights_close(pipeline_weights(*alone[0]), pipeline_weights(averaged), 1e-5,
                         "model averaging");
    EngineOptions bad = layout_options(2, 1, 1);
    bad.parallel.average_every = -1;
    EXPECT_THROW(Engine{bad}, ConfigError);
}

TEST(Pipeline, ManualCutsPlaceLayers) {
    EngineOptions o = layout_options(1, 3, 2);
    o.parallel.cuts = {3, 6};
    Engine engine(o);
    EXPECT_EQ(engine.stage_begin(1), 3u);
    EXPECT_EQ(engine.stage_begin(2), 6u);
    EXPECT_EQ(&engine.net().at(3).parameters()[0]->value.device(), &engine.stage_device(0, 1));
    EXPECT_EQ(&engine.net().at(9).parameters()[0]->value.device(), &engine.stage_device(0, 2));
    o = layout_options(1, 3, 2);
    o.parallel.cuts = {6, 3};
    EXPECT_THROW(Engine{o}, ConfigError);
}

// split = 'auto': the partitioner's cuts, chosen on first use; training is unchanged.
TEST(Pipeline, AutomaticSplitTrainsLikeOneDevice) {
    EngineOptions o = layout_options(1, 3, 2, PipelineSchedule::one_f_one_b);
    o.parallel.auto_split = true;
    Engine engine(o);
    EXPECT_FALSE(engine.prepared());
    engine.prepare({1, 8, 8}, 16);
    ASSERT_TRUE(engine.prepared());
    EXPECT_LT(engine.stage_begin(1), engine.stage_begin(2));
    EXPECT_NE(engine.partition_text().find("stage"), std::string::npos) << engine.partition_text();
    for (int s = 0; s < 5; ++s) engine.step(pipeline_batch(s).images, pipeline_batch(s).labels);
    expect_weights_close(train_pipeline(layout_options(1, 1, 1), 5), pipeline_weights(engine), 1e-4,
                         "auto 1x3x2");
}

TEST(Pipeline, BadLayoutsAreRefused) {
    EngineOptions o = layout_options(2, 2, 1);
    o.devices.pop_back();
    try {
        Engine e(o);
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("2 groups x 2 stages need 4 devices; given 3"),
                  std::string::npos)
            << e.what();
    }
    o = layout_options(1, 2, 1);
    o.devices[1] = o.devices[0];
    EXPECT_THROW(Engine{o}, ConfigError);
    Engine e(layout_options(2, 1, 4));
    const Batch b = make_batch(0, 6);  // 6 samples cannot fill 2 x 4 micro-batches
    EXPECT_THROW(e.step(b.images, b.labels), ConfigError);
}

// A label out of range fails on the last stage of one group; every worker stops, the error
// reaches the caller, no weight changes, and the next step runs.
TEST(Pipeline, AnErrorOnOneWorkerStopsTheStep) {
    Engine engine(layout_options(2, 2, 2, PipelineSchedule::one_f_one_b));
    const auto before = pipeline_weights(engine);
    Batch b = pipeline_batch(0);
    b.labels.data<int>()[13] = 7;
    try {
        engine.step(b.images, b.labels);
        FAIL() << "expected DataError";
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("7"), std::string::npos) << e.what();
    }
    expect_weights_close(before, pipeline_weights(engine), 0, "after a failed step");
    for (const auto& [name, w] : before) EXPECT_EQ(w, pipeline_weights(engine).at(name)) << name;
    const Batch good = pipeline_batch(1);
    EXPECT_NO_THROW(engine.step(good.images, good.labels));
}

// Out of memory on a middle stage while others wait in the pipeline and in the all-reduce.
TEST(Pipeline, OutOfMemoryOnOneStageNamesTheDevice) {
    EngineOptions o = layout_options(2, 2, 2);
    o.devices[3] = std::make_shared<CpuDevice>(7, CpuDeviceOptions{40 << 10, 1});
    Engine engine(o);
    const Batch b = make_batch(0, 512);
    try {
        engine.step(b.images, b.labels);
        FAIL() << "expected DeviceMemoryError";
    } catch (const DeviceMemoryError& e) {
        EXPECT_NE(e.full_message().find("cpu:7"), std::string::npos) << e.full_message();
    }
    const Batch small = make_batch(1, 4);
    EXPECT_NO_THROW(engine.step(small.images, small.labels));
}

// A net too big for one device's cap (pipeline_weights, gradients and momentum: 4.2 MB against 3
// MB) fails there with an error naming the device, and trains split over two such devices.
TEST(Pipeline, ANetTooBigForOneDeviceTrainsOnTwo) {
    auto big_net = [] {
        return std::make_shared<Sequential>(std::vector<LayerPtr>{
            std::make_shared<Flatten>(),
            std::make_shared<Linear>(LinearOptions{64, 400, true, "kaiming"}),
            std::make_shared<ReLU>(),
            std::make_shared<Linear>(LinearOptions{400, 400, true, "kaiming"}),
            std::make_shared<ReLU>(),
            std::make_shared<Linear>(LinearOptions{400, 400, true, "kaiming"}),
            std::make_shared<ReLU>(),
            std::make_shared<Linear>(LinearOptions{400, 3, true, "kaiming"})});
    };
    const std::size_t cap = 3'000'000;
    EngineOptions one = layout_options(1, 1, 1);
    one.net = big_net();
    one.devices = pipeline_devices(1, cap);
    Engine alone(one);
    const Batch b = pipeline_batch(0);
    try {
        alone.step(b.images, b.labels);
        FAIL() << "expected DeviceMemoryError";
    } catch (const DeviceMemoryError& e) {
        EXPECT_NE(e.full_message().find("cpu:0 out of memory"), std::string::npos)
            << e.full_message();
    }
    EngineOptions two = layout_options(1, 2, 2);
    two.net = big_net();
    two.devices = pipeline_devices(2, cap);
    two.parallel.cuts = {5};
    Engine split(two);
    double first = 0, last = 0;
    for (int s = 0; s < 10; ++s) {
        const double loss = split.step(pipeline_batch(s).images, pipeline_batch(s).labels).loss;
        (s == 0 ? first : last) = loss;
    }
    EXPECT_LT(last, first);
}

TEST(Pipeline, EvaluationMatchesOneDevice) {
    Engine one(layout_options(1, 1, 1)), split(layout_options(2, 2, 4));
    const Batch b = make_batch(3, 40);
    const LossSums a = one.evaluate_batch(b.images, b.labels),
                   c = split.evaluate_batch(b.images, b.labels);
    EXPECT_EQ(a.count, c.count);
    EXPECT_EQ(a.correct, c.correct);
    EXPECT_NEAR(a.loss, c.loss, 1e-5 * std::abs(a.loss));
    const Batch tiny = make_batch(4, 3);  // fewer samples than groups x micro-batches
    EXPECT_EQ(split.evaluate_batch(tiny.images, tiny.labels).count, 3);
}

// A checkpoint holds the model by layer name: saved under 2 x 2, it resumes under 1 x 1 and
// 1 x 4 and continues as the 2 x 2 run does.
TEST(Pipeline, CheckpointsResumeUnderAnotherLayout) {
    TempDir dir;
    const std::string path = (dir.path() / "ck.safetensors").string();
    Engine straight(layout_options(2, 2, 2));
    for (int s = 0; s < 3; ++s) straight.step(pipeline_batch(s).images, pipeline_batch(s).labels);
    straight.save(path);
    for (int s = 3; s < 6; ++s) straight.step(pipeline_batch(s).images, pipeline_batch(s).labels);
    for (auto [g, st] : {std::pair{1, 1}, std::pair{1, 4}, std::pair{2, 1}}) {
        EngineOptions o = layout_options(g, st, 2);
        o.seed = 999;  // everything comes from the file
        Engine resumed(o);
        resumed.load(path);
        EXPECT_EQ(resumed.steps(), 3);
        for (int s = 3; s < 6; ++s)
            resumed.step(pipeline_batch(s).images, pipeline_batch(s).labels);
        expect_weights_close(pipeline_weights(straight), pipeline_weights(resumed), 1e-4,
                             std::to_string(g) + "x" + std::to_string(st));
    }
}

// Adam's state and gradient clipping's global norm span the stages and groups of a layout:
// every layout trains as one device does.
TEST(Pipeline, AdamWithClippingTrainsLikeOneDevice) {
    auto with_adam = [](EngineOptions o) {
        o.optimizer.kind = OptimizerKind::adam;
        o.optimizer.adam.decoupled = true, o.optimizer.adam.weight_decay = 0.01f;
        o.optimizer.clip_norm = 0.5f;
        return o;
    };
    const auto one = train_pipeline(with_adam(layout_options(1, 1, 1)), 5);
    for (auto [g, s, m] : {std::tuple{1, 2, 4}, std::tuple{2, 1, 1}, std::tuple{2, 2, 2}}) {
        const std::string what =
            std::to_string(g) + "x" + std::to_string(s) + "x" + std::to_string(m);
        expect_weights_close(one, train_pipeline(with_adam(layout_options(g, s, m)), 5), 1e-4,
                             what);
    }
}

// With plain SGD a clipped step is the unclipped one scaled by clip_norm / norm, the norm
// taken over the gradients of every stage (here two stages of two groups).
TEST(Pipeline, ClippingScalesTheStepByTheGlobalNorm) {
    auto plain_sgd = [](float clip_norm) {
        EngineOptions o = layout_options(2, 2, 2);
        o.optimizer.sgd = SgdOptions{.lr = 0.1f};
        o.optimizer.clip_norm = clip_norm;
        return o;
    };
    Engine unclipped(plain_sgd(0)), clipped(plain_sgd(0.05f));
    const auto w0 = pipeline_weights(unclipped);
    const Batch b = pipeline_batch(0);
    EXPECT_EQ(unclipped.step(b.images, b.labels).grad_norm, 0);  // not asked for: not computed
    const double norm = clipped.step(b.images, b.labels).grad_norm;
    const auto u = pipeline_weights(unclipped), c = pipeline_weights(clipped);
    double squares = 0;
    for (const auto& [name, before] : w0)
        for (std::size_t i = 0; i < before.size(); ++i) {
            const double g = (double(before[i]) - u.at(name)[i]) / 0.1;
            squares += g * g;
        }
    EXPECT_NEAR(norm, std::sqrt(squares), 1e-3 * norm);
    ASSERT_GT(norm, 0.05);
    const double factor = 0.05 / (norm + 1e-6);
    for (const auto& [name, before] : w0)
        for (std::size_t i = 0; i < before.size(); ++i) {
            const double want = before[i] - factor * (double(before[i]) - u.at(name)[i]);
            ASSERT_NEAR(c.at(name)[i], want, 1e-6 + 1e-4 * std::abs(want))
                << name << "[" << i << "]";
        }
}

// A regression loss across a layout: an autoencoder of the images (MSE against the images
// themselves) trains as on one device; its result has no accuracy.
TEST(Pipeline, AutoencoderWithMseTrainsLikeOneDevice) {
    auto autoencoder = [](int g, int s, int m) {
        EngineOptions o = layout_options(g, s, m);
        o.net = std::make_shared<Sequential>(std::vector<LayerPtr>{
            std::make_shared<Flatten>(),
            std::make_shared<Linear>(LinearOptions{64, 16, true, "kaiming"}),
            std::make_shared<ReLU>(),
            std::make_shared<Linear>(LinearOptions{16, 64, true, "kaiming"})});
        o.loss = std::make_shared<ElementLoss>(ElementLossKind::mse);
        return o;
    };
    auto train_autoencoder = [](EngineOptions o, double* first, double* last) {
        Engine engine(std::move(o));
        for (int step = 0; step < 5; ++step) {
            const Batch b = pipeline_batch(step);
            const StepResult r = engine.step(b.images, b.images.reshape({b.images.shape()[0], 64}));
            EXPECT_EQ(r.accuracy, 0);
            if (step == 0) *first = r.loss;
            *last = r.loss;
        }
        return pipeline_weights(engine);
    };
    double first = 0, last = 0;
    const auto one = train_autoencoder(autoencoder(1, 1, 1), &first, &last);
    EXPECT_LT(last, first);
    for (auto [g, s, m] : {std::tuple{1, 2, 4}, std::tuple{2, 2, 2}}) {
        double f = 0, l = 0;
        expect_weights_close(one, train_autoencoder(autoencoder(g, s, m), &f, &l), 1e-4,
                             std::to_string(g) + "x" + std::to_string(s) + "x" + std::to_string(m));
        EXPECT_NEAR(l, last, 1e-5 * last);
    }
    // Class labels are not an MSE's targets: said before the step, in the loss's terms.
    Engine engine(autoencoder(1, 1, 1));
    const Batch b = pipeline_batch(0);
    EXPECT_THROW(engine.step(b.images, b.labels), ShapeError);
}

TEST(Pipeline, TraceRecordsEveryWorkersOps) {
    EngineOptions o = layout_options(2, 2, 3, PipelineSchedule::one_f_one_b);
    o.trace = std::make_shared<Trace>();
    Engine engine(o);
    const Batch b = make_batch(0, 12);
    engine.step(b.images, b.labels);
    std::map<std::string, std::map<std::string, int>> counts;  // track -> category -> spans
    for (const auto& e : o.trace->events()) counts[e.track][e.category] += 1;
    ASSERT_EQ(counts.size(), 8u);  // the workers, and their lanes reducing during backward
    for (int g = 0; g < 2; ++g)
        for (int s = 0; s < 2; ++s) {
            auto& c = counts[engine.stage_device(g, s).name()];
            EXPECT_EQ(c["forward"], 3);
            EXPECT_EQ(c["backward"], 3);
            EXPECT_EQ(c["transfer"], s == 0 ? 6 : 3);  // inputs and gradients; activations
            EXPECT_EQ(c["optimizer"], 1);
            EXPECT_GE(counts[engine.stage_device(g, s).name() + " all-reduce"]["allreduce"], 1);
        }
}

}  // namespace
}  // namespace tandem::test

// The engine's loss scaling (optim/loss_scaler.h), in float32 where its arithmetic is exact: a
// power-of-two scale trains bit for bit as no scale does, on one device and across groups and
// stages; a step whose scaled gradients overflow changes nothing anywhere and halves the scale,
// after which the run is the unscaled run of the steps that were taken; the scale doubles after
// its window, resumes exactly, and a diverged loss is an error rather than endless skipping.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "device/cpu/cpu_device.h"
#include "engine/engine.h"
#include "io/safetensors.h"
#include "layers/batch_norm2d.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "support/expect_error.h"
#include "support/temp_dir.h"
#include "support/toy_batch.h"

namespace tandem::test {
namespace {

// With `batch_norm`, a BatchNorm2d after the convolution.
std::shared_ptr<Sequential> scaled_loss_net(bool batch_norm) {
    Conv2dOptions c;
    c.in_channels = 1, c.out_channels = 8, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    std::vector<LayerPtr> layers{
        std::make_shared<Conv2d>(c),
        std::make_shared<ReLU>(),
        std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{8 * 8 * 8, 16, true, "kaiming"}),
        std::make_shared<ReLU>(),
        std::make_shared<Linear>(LinearOptions{16, 3, true, "kaiming"})};
    if (batch_norm)
        layers.insert(layers.begin() + 1, std::make_shared<BatchNorm2d>(BatchNorm2dOptions{8}));
    return std::make_shared<Sequential>(layers);
}

// `groups` x `stages` CPU devices of one thread each.
EngineOptions scaled_loss_options(LossScaleOptions scaling, int groups = 1, int stages = 1,
                                  bool batch_norm = true) {
    EngineOptions o;
    o.net = scaled_loss_net(batch_norm);
    for (int d = 0; d < groups * stages; ++d)
        o.devices.push_back(
            std::make_shared<CpuDevice>(d, CpuDeviceOptions{std::size_t(1) << 30, 1}));
    o.parallel.groups = groups, o.parallel.stages = stages;
    o.optimizer.sgd = SgdOptions{0.05f, 0.9f, 0.f, 1e-4f, true};
    o.optimizer.clip_norm = 5.f;  // clipping must see the gradients unscaled
    o.seed = 11;
    // The CPU's layout. (In the contiguous layout this net's first convolution runs on
    // oneDNN 2.6's gemm:jit kernels, which leave a primitive behind that LeakSanitizer finds
    // once an engine has executed it on its own device.)
    o.layout = Layout::channels_last;
    o.loss_scale = scaling;
    return o;
}

const LossScaleOptions kNoScale{LossScaleMode::none, 1, 1};

std::vector<std::vector<float>> weights_of(Engine& e) {
    std::vector<std::vector<float>> out;
    for (const auto& p : named_parameters(e.net())) out.push_back(p.parameter->value.to_vector());
    return out;
}

TEST(EngineLossScale, PowerOfTwoScaleTrainsBitForBitAsNoScale) {
    for (const auto& [groups, stages] : std::vector<std::pair<int, int>>{{1, 1}, {2, 2}}) {
        auto scaled_options = scaled_loss_options({LossScaleMode::fixed, 1024, 1}, groups, stages);
        scaled_options.parallel.micro_batches = 2;
        auto plain_options = scaled_loss_options(kNoScale, groups, stages);
        plain_options.parallel.micro_batches = 2;
        Engine scaled(std::move(scaled_options)), plain(std::move(plain_options));
        for (int s = 0; s < 5; ++s) {
            const Batch b = make_batch(s, 12);
            const StepResult r = scaled.step(b.images, b.labels);
            EXPECT_EQ(r.loss_scale, 1024.f);
            EXPECT_FALSE(r.skipped);
            const StepResult q = plain.step(b.images, b.labels);
            EXPECT_EQ(q.loss_scale, 0.f) << "no scaling reports no scale";
            EXPECT_EQ(r.grad_norm, q.grad_norm) << "clipping saw scaled gradients";
        }
        EXPECT_EQ(weights_of(scaled), weights_of(plain)) << groups << " x " << stages;
    }
}

// A scale of 2^127 overflows the gradients of these images (x 100): the steps are skipped, the
// scale halves each time, and once the gradients are finite the run is, bit for bit, the
// unscaled run that trained on the batches of the steps taken. The net has no batch norm here:
// normalising, it takes the images' x 100 back out of the gradients, and whether 2^127 then
// overflows is a matter of how a kernel orders its sums (the CPU's batch norm sums in double).
TEST(EngineLossScale, OverflowSkipsTheStepEverywhereAndHalvesTheScale) {
    const float huge = std::ldexp(1.f, 127);
    auto scaled_options = scaled_loss_options({LossScaleMode::dynamic, huge, 1000}, 2, 2, false);
    Engine scaled(std::move(scaled_options)), plain(scaled_loss_options(kNoScale, 2, 2, false));
    const auto initial = weights_of(scaled);
    float expected_scale = huge;
    int skipped = 0;
    for (int s = 0; s < 10; ++s) {
        const Batch b = make_batch(s, 12, 100);
        const auto before = weights_of(scaled);
        const StepResult r = scaled.step(b.images, b.labels);
        EXPECT_EQ(r.loss_scale, expected_scale) << "step " << s;
        if (r.skipped) {
            ++skipped;
            expected_scale /= 2;
            EXPECT_EQ(weights_of(scaled), before) << "a skipped step changed weights, step " << s;
        } else {
            plain.step(b.images, b.labels);
        }
    }
    ASSERT_GT(skipped, 0) << "2^127 never overflowed: the test proves nothing";
    ASSERT_LT(skipped, 8) << "the scale never came down far enough";  // 6 when written
    EXPECT_EQ(scaled.loss_scaler().skipped(), skipped);
    EXPECT_EQ(scaled.steps(), 10) << "a skipped step is still a step";
    EXPECT_NE(weights_of(scaled), initial);
    EXPECT_EQ(weights_of(scaled), weights_of(plain));
}

TEST(EngineLossScale, DynamicScaleDoublesAfterItsWindowAndResumesExactly) {
    TempDir dir;
    const std::string path = (dir.path() / "scaled.safetensors").string();
    const LossScaleOptions scaling{LossScaleMode::dynamic, 8, 3};
    Engine straight(scaled_loss_options(scaling));
    std::vector<float> scales;
    for (int s = 0; s < 8; ++s) {
        const Batch b = make_batch(s, 12);
        scales.push_back(straight.step(b.images, b.labels).loss_scale);
    }
    EXPECT_EQ(scales, (std::vector<float>{8, 8, 8, 16, 16, 16, 32, 32}));
    {
        Engine first(scaled_loss_options(scaling));
        for (int s = 0; s < 4; ++s) first.step(make_batch(s, 12).images, make_batch(s, 12).labels);
        first.save(path);
    }
    Engine resumed(scaled_loss_options(scaling));
    resumed.load(path);
    EXPECT_EQ(resumed.loss_scaler().scale(), 16.f);
    for (int s = 4; s < 8; ++s) {
        const Batch b = make_batch(s, 12);
        EXPECT_EQ(resumed.step(b.images, b.labels).loss_scale, scales[std::size_t(s)]) << s;
    }
    EXPECT_EQ(weights_of(resumed), weights_of(straight));
    // A checkpoint written without loss scaling loads, and the scale starts afresh.
    Engine unscaled(scaled_loss_options(kNoScale));
    unscaled.step(make_batch(0, 12).images, make_batch(0, 12).labels);
    unscaled.save(path);
    Engine fresh(scaled_loss_options(scaling));
    fresh.load(path);
    EXPECT_EQ(fresh.loss_scaler().scale(), 8.f);
}

// The scale in a checkpoint's metadata: read back exactly (a scale that is no power of two
// too), and a damaged value refused naming the file and the entry, the engine as it was.
TEST(EngineLossScale, CheckpointMetadataIsExactAndDamageChangesNothing) {
    TempDir dir;
    const std::string path = (dir.path() / "scaled.safetensors").string();
    Engine saved(scaled_loss_options({LossScaleMode::dynamic, 1000.1f, 4}));
    saved.step(make_batch(0, 12).images, make_batch(0, 12).labels);
    saved.save(path);
    Engine resumed(scaled_loss_options({LossScaleMode::dynamic, 8, 4}));
    resumed.load(path);
    EXPECT_EQ(resumed.loss_scaler().scale(), 1000.1f);
    EXPECT_EQ(resumed.loss_scaler().state().good_steps, 1);

    const SafetensorsContents file = load_safetensors(path, host_device());
    for (const auto& [key, bad, words] : std::vector<std::array<std::string, 3>>{
             {"loss_scale", "-4", "must be a finite number > 0, got '-4'"},
             {"loss_scale", "inf", "must be a finite number > 0, got 'inf'"},
             {"loss_scale", "12x", "must be a finite number > 0, got '12x'"},
             {"loss_scale_good_steps", "1.5", "must be a whole number >= 0, got '1.5'"},
             {"loss_scale_skipped", "", "must be a whole number >= 0, got ''"}}) {
        auto meta = file.metadata;
        meta[key] = bad;
        const std::string damaged = (dir.path() / "damaged.safetensors").string();
        save_safetensors(damaged, file.tensors, meta);
        Engine untouched(scaled_loss_options({LossScaleMode::dynamic, 512, 4}));
        expect_error<DataError>([&] { untouched.load(damaged); },
                                damaged + ": metadata '" + key + "' " + words);
        EXPECT_EQ(untouched.loss_scaler().scale(), 512.f) << key << " = " << bad;
        EXPECT_EQ(untouched.steps(), 0);
    }
}

TEST(EngineLossScale, ADivergedLossIsAnErrorNotEndlessSkipping) {
    Engine e(scaled_loss_options({LossScaleMode::dynamic, 2, 100}));
    Batch b = make_batch(0, 12);
    auto x = b.images.to_vector();
    x[5] = std::nanf("");
    b.images = Tensor::from_vector(b.images.shape(), host_device(), x);
    const auto before = weights_of(e);
    EXPECT_TRUE(e.step(b.images, b.labels).skipped);
    expect_error<Error>([&] { e.step(b.images, b.labels); },
                        "the gradients are not finite even with the loss scaled by 1");
    EXPECT_EQ(weights_of(e), before);
    // The engine goes on with good data.
    const Batch good = make_batch(1, 12);
    EXPECT_FALSE(e.step(good.images, good.labels).skipped);
}

TEST(EngineLossScale, RefusedWithModelAveragingAcrossProcesses) {
    auto o = scaled_loss_options({LossScaleMode::fixed, 256, 1}, 2, 1);
    o.parallel.average_every = 2;
    o.parallel.mpi = true;
    expect_error<ConfigError>([&] { Engine e(std::move(o)); },
                              "loss scaling does not combine with model averaging under MPI");
}

}  // namespace
}  // namespace tandem::test

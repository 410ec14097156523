// The analytic cost model from shapes: FLOPs and bytes per sample from the layers, their kernels
// by class, times affine in the batch, the first kernel's backward without an input gradient,
// the precisions, and the shapes' memory figures; the measured model's machine figures, its
// concurrent measurements ending (no hang) when one thread fails, and its profiles taken in
// rounds that keep each figure's fastest.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>

#include "base/error.h"
#include "layers/activation.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "plan/analytic_costs.h"
#include "plan/machine_probe.h"
#include "plan/measured_costs.h"

namespace tandem::test {
namespace {

Conv2dOptions conv64() {
    Conv2dOptions d;
    d.in_channels = 64, d.out_channels = 64, d.kernel_h = d.kernel_w = 3, d.pad_h = d.pad_w = 1;
    return d;
}

std::shared_ptr<Sequential> cost_net() {
    Conv2dOptions c;
    c.in_channels = 3, c.out_channels = 64, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    Conv2dOptions d = c;
    d.in_channels = 64;
    return std::make_shared<Sequential>(std::vector<LayerPtr>{
        std::make_shared<Conv2d>(c), std::make_shared<ReLU>(), std::make_shared<Conv2d>(d),
        std::make_shared<ReLU>(), std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{64 * 32 * 32, 10, true, "kaiming"})});
}

TopologyDevice v100() {
    TopologyDevice d;
    d.name = "gpu0", d.model = "V100";
    return d;
}

TEST(CostModel, ShapesGiveFlopsAndBytesPerSample) {
    auto n = cost_net();
    const NetShapes s = net_shapes(*n, Shape({3, 32, 32}));
    ASSERT_EQ(s.layers.size(), 6u);
    // conv2: 64 x 64 x 3 x 3 multiply-adds per output pixel, 32 x 32 pixels, two FLOPs each.
    EXPECT_DOUBLE_EQ(s.layers[2].forward_flops, 2.0 * 64 * 64 * 9 * 32 * 32);
    EXPECT_EQ(s.layers[0].input_bytes, 3u * 32 * 32 * 4);
    EXPECT_EQ(s.layers[0].output_bytes, 64u * 32 * 32 * 4);
    EXPECT_EQ(s.layers[5].parameter_bytes, (64u * 32 * 32 * 10 + 10) * 4);
    EXPECT_EQ(s.classes, 10);
}

TEST(CostModel, KernelsAreClassedByTheirAlgorithm) {
    auto n = cost_net();
    const NetShapes s = net_shapes(*n, Shape({3, 32, 32}));
    // A thin first convolution, a 3x3 one over 64 channels (Winograd's), a product.
    EXPECT_EQ(s.layers[0].leaves.at(0).kernel_class, KernelClass::conv_other);
    EXPECT_EQ(s.layers[2].leaves.at(0).kernel_class, KernelClass::conv_winograd);
    EXPECT_EQ(s.layers[1].leaves.at(0).kernel_class, KernelClass::memory);
    EXPECT_EQ(s.layers[5].leaves.at(0).kernel_class, KernelClass::gemm);
    // conv2 as a product: 32 x 32 output pixels a sample, 64 channels, 64 x 3 x 3 inner.
    const KernelShape& conv2 = s.layers[2].leaves[0];
    EXPECT_EQ(conv2.rows, 32 * 32);
    EXPECT_EQ(conv2.columns, 64);
    EXPECT_EQ(conv2.inner, 64 * 9);
    EXPECT_DOUBLE_EQ(conv2.flops, s.layers[2].forward_flops);
    // Flatten is a view: no kernel.
    EXPECT_FALSE(s.layers[4].leaves.at(0).launches);
}

TEST(CostModel, AnalyticTimesAreAffineInTheBatch) {
    auto n = cost_net();
    const AnalyticCostModel model(net_shapes(*n, Shape({3, 32, 32})), true);
    const auto at = [&](std::int64_t batch) { return model.layer_costs(v100(), batch); };
    const auto b16 = at(16), b32 = at(32), b64 = at(64);
    for (std::size_t i : {std::size_t(0), std::size_t(1), std::size_t(2)}) {
        // A fixed cost a kernel, then time in proportion to the batch (conv2's narrowest
        // dimension, its 64 channels, does not grow with it).
        EXPECT_NEAR(b64[i].forward_ms - b32[i].forward_ms,
                    2 * (b32[i].forward_ms - b16[i].forward_ms), 1e-9);
        EXPECT_NEAR(b64[i].backward_ms - b32[i].backward_ms,
                    2 * (b32[i].backward_ms - b16[i].backward_ms), 1e-9);
    }
    // So a small micro-batch costs a convolution more a sample than a large one.
    EXPECT_GT(b16[2].forward_ms / 16, b64[2].forward_ms / 64);
    EXPECT_GT(b16[2].backward_ms / 16, b64[2].backward_ms / 64);
    EXPECT_EQ(b64[4].forward_ms, 0);  // Flatten
    EXPECT_EQ(b64[5].parameter_bytes, b32[5].parameter_bytes);
    EXPECT_EQ(b64[5].optimizer_bytes, b32[5].parameter_bytes);  // momentum
    EXPECT_EQ(b64[2].input_bytes, 2 * b32[2].input_bytes);
    // One update kernel per parameter tensor: ResNet-50's 161 launch 160 more than one tensor.
    const double one = model.update_ms(v100(), 32, b32[5].parameter_bytes, 1);
    EXPECT_GT(one, 0);
    EXPECT_NEAR(model.update_ms(v100(), 32, b32[5].parameter_bytes, 161) - one, 160 * 0.005, 1e-9);
    TopologyDevice unknown = v100();
    unknown.model = "V9000";
    EXPECT_THROW(model.layer_costs(unknown, 1), ConfigError);
}

// The net's first kernel computes no input gradient: its backward does half the work of the
// same convolution further in.
TEST(CostModel, TheFirstKernelHasNoInputGradient) {
    auto twin = [](bool first) {
        std::vector<LayerPtr> layers;
        if (!first) layers.push_back(std::make_shared<ReLU>());
        layers.push_back(std::make_shared<Conv2d>(conv64()));
        Sequential n(layers);
        const auto costs = AnalyticCostModel(net_shapes(n, Shape({64, 32, 32})), true)
                               .kernel_times(first ? 0 : 1, v100(), 32);
        return costs.at(0);
    };
    const KernelTime first = twin(true), later = twin(false);
    EXPECT_EQ(first.forward_ms, later.forward_ms);
    EXPECT_LT(first.backward_ms, later.backward_ms);
}

// Tensor cores: half precision runs the products at the tensor peak and stores activations in
// two bytes; TF32 needs an Ampere (a V100 runs it as FP32); BF16 is refused before Ampere.
TEST(CostModel, PrecisionPicksThePeakAndTheBytes) {
    auto n = cost_net();
    const NetShapes s = net_shapes(*n, Shape({3, 32, 32}));
    const auto step = [&](Precision p, const char* model) {
        TopologyDevice d = v100();
        d.model = model;
        return AnalyticCostModel(s, true, p).layer_costs(d, 64);
    };
    const auto fp32 = step(Precision::fp32, "V100"), fp16 = step(Precision::fp16, "V100");
    EXPECT_LT(fp16[2].forward_ms, fp32[2].forward_ms);
    EXPECT_EQ(fp16[2].output_bytes * 2, fp32[2].output_bytes);
    EXPECT_EQ(step(Precision::tf32, "V100")[2].forward_ms, fp32[2].forward_ms);
    EXPECT_LT(step(Precision::tf32, "A100")[2].forward_ms,
              step(Precision::fp32, "A100")[2].forward_ms);
    EXPECT_THROW(step(Precision::bf16, "V100"), ConfigError);
    EXPECT_NO_THROW(step(Precision::bf16, "A100"));
    EXPECT_EQ(parse_precision("tf32"), Precision::tf32);
    EXPECT_THROW(parse_precision("fp8"), ConfigError);
}

// Every element-wise activation is memory-bound as ReLU is: the same bytes, the same times.
TEST(CostModel, ActivationsCostAsReLUDoes) {
    auto costs_with = [](LayerPtr activation) {
        Sequential n({std::make_shared<Conv2d>(conv64()), std::move(activation)});
        const NetShapes s = net_shapes(n, Shape({64, 32, 32}));
        return AnalyticCostModel(s, true).layer_costs(v100(), 32)[1];
    };
    const LayerCost relu = costs_with(std::make_shared<ReLU>());
    EXPECT_GT(relu.forward_ms, 0);
    using A = ActivationAlgorithm;
    for (A a : {A::leaky_relu, A::sigmoid, A::tanh, A::gelu_erf, A::gelu_tanh}) {
        const float slope = a == A::leaky_relu ? 0.1f : 0.f;
        const LayerCost c = costs_with(std::make_shared<Activation>(a, slope));
        EXPECT_EQ(c.forward_ms, relu.forward_ms) << activation_name(a);
        EXPECT_EQ(c.backward_ms, relu.backward_ms) << activation_name(a);
        EXPECT_EQ(c.output_bytes, relu.output_bytes) << activation_name(a);
        EXPECT_EQ(c.saved_bytes, relu.saved_bytes) << activation_name(a);
    }
}

TEST(CostModel, MachineFiguresAreMeasured) {
    for (auto algorithm : {ReduceAlgorithm::ring, ReduceAlgorithm::tree}) {
        const double ms = measure_all_reduce_ms(std::size_t(1) << 20, 2, algorithm);
        EXPECT_TRUE(std::isfinite(ms) && ms > 0) << ms;
    }
    const double slowdown = measure_update_slowdown(std::size_t(1) << 20, 2, true);
    EXPECT_TRUE(std::isfinite(slowdown) && slowdown > 0) << slowdown;
    // Eight threads passing tokens (under ThreadSanitizer too). Every recorded wait takes some
    // time; 0 would mean none was recorded.
    const double wait = measure_crowded_handoff_ms(2);
    EXPECT_TRUE(std::isfinite(wait) && wait > 0) << wait;
}

// A profile thread that fails inside a step while the others wait at the step barrier: the
// contention measurement ends and reports the failure.
TEST(CostModel, AFailedConcurrentProfileStopsTheMeasurement) {
    std::atomic<int> calls{0};
    const MeasuredCostModel model(
        net_shapes(*cost_net(), Shape({3, 32, 32})), true,
        [&](int, std::int64_t batch, StepEnd after_step) {
            const int call = calls++;
            NetProfile p;
            p.batch = batch, p.step_ms = 1, p.update_ms = 0.1;
            for (int step = 0; step < 5; ++step) {
                if (call == 2 && step == 3) throw DeviceMemoryError("out of memory in a profile");
                if (after_step) after_step();
            }
            return p;
        },
        [] {
            return MachineFigures{8.0, 0.01, 0.01, 0.01};
        });
    EXPECT_THROW(model.contention(2, 2, 4), DeviceMemoryError);
}

// Contention among more busy devices than cores (twice as many threads) is measured only once a
// plan asks about it: a machine's layouts of no more devices than cores never pay for it.
TEST(CostModel, ContentionBeyondTheCoresIsMeasuredOnlyWhenAsked) {
    std::atomic<int> calls{0};
    const MeasuredCostModel model(
        net_shapes(*cost_net(), Shape({3, 32, 32})), true,
        [&](int, std::int64_t batch, StepEnd after_step) {
            ++calls;
            NetProfile p;
            p.batch = batch, p.step_ms = 1, p.update_ms = 0.1;
            if (after_step) after_step();
            return p;
        },
        [] {
            return MachineFigures{8.0, 0.01, 0.01, 0.01};
        });
    EXPECT_DOUBLE_EQ(model.contention(2, 2, 4), 1.0);
    EXPECT_EQ(calls, 1 + 6);  // the one-thread profile, then three trials of two at once
    ASSERT_EQ(model.calibration().contention.size(), 1u);
    EXPECT_EQ(model.calibration().contention[0].over, 0.0) << "not measured yet";
    model.contention(2, 2, 4);
    EXPECT_EQ(calls, 7) << "kept";
    model.contention(3, 2, 4);
    EXPECT_EQ(calls, 7 + 12);  // three trials of four at once, against the same profile
    EXPECT_GE(model.calibration().contention[0].over, 1.0);
    model.contention(4, 2, 4);
    EXPECT_EQ(calls, 19) << "kept";
}

// The slowdown is the step on busy threads against the one-thread profile the simulator prices
// ops from, so that the two multiplied give the step measured busy: a step timed alone again
// beside each trial would put its own noise into the factor.
TEST(CostModel, ContentionIsTheBusyStepAgainstTheProfile) {
    int alone_calls = 0;
    const MeasuredCostModel model(
        net_shapes(*cost_net(), Shape({3, 32, 32})), true,
        [&](int, std::int64_t batch, StepEnd after_step) {
            NetProfile p;
            p.batch = batch, p.update_ms = 0.1;
            if (after_step) {
                after_step();
                p.step_ms = 3;  // two at once
            } else {
                // The profile, then (were it asked again) a slower moment.
                p.step_ms = alone_calls++ == 0 ? 2 : 10;
            }
            return p;
        },
        [] {
            return MachineFigures{8.0, 0.01, 0.01, 0.01};
        });
    EXPECT_DOUBLE_EQ(model.contention(2, 2, 4), 1.5);
    EXPECT_EQ(alone_calls, 1);
    ASSERT_EQ(model.calibration().profiles.size(), 1u);
    EXPECT_DOUBLE_EQ(model.calibration().profiles[0].step_ms * model.contention(2, 2, 4), 3.0);
}

// prefetch: every size profiled `rounds` times, the sizes taking turns; each figure the
// smallest of its rounds (a burst that slowed one round of a size is dropped); sizes already
// measured are not measured again, and later questions are answered from what was kept.
TEST(CostModel, PrefetchedProfilesTakeTurnsAndKeepEachFiguresFastestRound) {
    std::vector<std::int64_t> order;
    const MeasuredCostModel model(
        net_shapes(*cost_net(), Shape({3, 32, 32})), true,
        [&](int, std::int64_t batch, std::function<void()>) {
            const int round = static_cast<int>(std::count(order.begin(), order.end(), batch));
            order.push_back(batch);
            // Round 1 of batch 4 is the disturbed one for the step; round 2 for the first layer.
            NetProfile p;
            p.batch = batch, p.update_ms = 0.5;
            p.step_ms = double(batch) * (batch == 4 && round == 1 ? 3.0 : 2.0) + round * 0.1;
            for (int i = 0; i < 6; ++i) {
                LayerProfile l;
                l.name = "layer" + std::to_string(i);
                l.forward_ms = 0.1 * double(batch) * (i == 0 && round == 2 ? 5 : 1);
                l.backward_ms = 0.2 * double(batch) + round * 0.01;
                p.layers.push_back(l);
            }
            return p;
        },
        [] {
            return MachineFigures{8.0, 0.01, 0.01, 0.01};
        },
        3);
    TopologyDevice cpu;
    cpu.name = "cpu0", cpu.model = "cpu", cpu.cpu = true, cpu.threads = 1;
    model.prefetch(cpu, {4, 1, 4, 2});
    EXPECT_EQ(order, (std::vector<std::int64_t>{1, 2, 4, 1, 2, 4, 1, 2, 4}));
    const auto costs = model.layer_costs(cpu, 4);
    EXPECT_NEAR(costs[0].forward_ms, 0.4, 1e-12);   // rounds 0 and 1, not the disturbed round 2
    EXPECT_NEAR(costs[1].backward_ms, 0.8, 1e-12);  // round 0
    // The loss is the step beyond layers and update: the fastest step (round 0, 8 ms).
    double layers = 0;
    for (const auto& c : costs) layers += c.forward_ms + c.backward_ms;
    EXPECT_NEAR(model.loss_ms(cpu, 4), 8.0 - layers - 0.5, 1e-9);
    model.prefetch(cpu, {2, 8});
    EXPECT_EQ(order.size(), 12u);  // batch 8 alone, three times
    EXPECT_EQ(model.profiles_taken(), 4u);
    EXPECT_THROW(model.prefetch(v100(), {1}), ConfigError);
}

// The last-level cache, as sysfs lists this machine's caches (where it does): the largest
// level's data or unified cache, at least an L1's size; the measured model prints it.
TEST(CostModel, TheLastLevelCacheIsReadFromSysfs) {
    if (!std::filesystem::exists("/sys/devices/system/cpu/cpu0/cache/index0"))
        GTEST_SKIP() << "no cache listing in sysfs here";
    EXPECT_GE(last_level_cache_bytes(), std::size_t(16) << 10);
}

// The update as the profile of the plan's micro-batch timed it (a larger backward leaves the
// weights out of the caches), shared out by bytes; the step of one device alone is then the
// profiled step, whatever the update of another batch size.
TEST(CostModel, TheUpdateIsTimedAfterTheMicroBatchsBackward) {
    const NetShapes shapes = net_shapes(*cost_net(), Shape({3, 32, 32}));
    const MeasuredCostModel model(
        shapes, true,
        [&](int, std::int64_t batch, StepEnd) {
            NetProfile p;
            p.batch = batch, p.step_ms = 10.0 * double(batch), p.update_ms = 0.1 * double(batch);
            LayerProfile l;
            l.name = "all", l.forward_ms = 2.0 * double(batch), l.backward_ms = 4.0 * double(batch);
            p.layers.push_back(l);
            return p;
        },
        [] {
            return MachineFigures{8.0, 0.01, 0.01, 0.01};
        });
    TopologyDevice cpu;
    cpu.name = "cpu0", cpu.model = "cpu", cpu.cpu = true, cpu.threads = 1;
    const std::size_t all = shapes.parameter_bytes();
    EXPECT_NEAR(model.update_ms(cpu, 1, all, 10), 0.1, 1e-12);
    EXPECT_NEAR(model.update_ms(cpu, 32, all, 10), 3.2, 1e-12);
    EXPECT_NEAR(model.update_ms(cpu, 32, all / 4, 10), 0.8, 1e-12);
    const double layers =
        model.layer_costs(cpu, 32)[0].forward_ms + model.layer_costs(cpu, 32)[0].backward_ms;
    EXPECT_NEAR(layers + model.loss_ms(cpu, 32) + model.update_ms(cpu, 32, all, 10), 320.0, 1e-9);
}

}  // namespace
}  // namespace tandem::test

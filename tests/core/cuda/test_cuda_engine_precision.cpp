// Mixed precision and loss scaling on a GPU, through the engine: fp16 (dynamic loss scale, on by
// default) and bf16 train as float32 does within what rounding the products' operands explains,
// with float32 master weights; and a step whose scaled gradients overflow is found on the GPU
// (its sum of squares), skipped, and halves the scale. Skipped, saying why, without a GPU or
// where the GPU lacks the precision's tensor cores.
#include <cmath>
#include <iostream>

#include "engine/engine.h"
#include "layers/batch_norm2d.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "support/cuda_parity.h"
#include "support/toy_batch.h"

namespace tandem::test {
namespace {

std::shared_ptr<Sequential> gpu_precision_net() {
    Conv2dOptions c;
    c.in_channels = 1, c.out_channels = 16, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    return std::make_shared<Sequential>(std::vector<LayerPtr>{
        std::make_shared<Conv2d>(c), std::make_shared<BatchNorm2d>(BatchNorm2dOptions{16}),
        std::make_shared<ReLU>(), std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{16 * 8 * 8, 32, true, "kaiming"}),
        std::make_shared<ReLU>(), std::make_shared<Linear>(LinearOptions{32, 3, true, "kaiming"})});
}

EngineOptions gpu_precision_options(Precision precision, LossScaleOptions scaling = {}) {
    EngineOptions o;
    o.net = gpu_precision_net();
    o.devices = {own_cuda_device()};
    o.optimizer.sgd = SgdOptions{0.01f, 0.9f, 0.f, 1e-4f, true};
    o.seed = 4;
    o.precision = precision;
    o.loss_scale = scaling;
    return o;
}

TEST(CudaEnginePrecision, HalfPrecisionsTrainAsFloat32DoesWithinRounding) {
    TANDEM_REQUIRE_GPUS(1);
    for (Precision precision : {Precision::fp16, Precision::bf16}) {
        SCOPED_TRACE(std::string(precision_name(precision)));
        if (const auto why = gpu().precision_unavailable(precision); !why.empty()) {
            std::cout << "skipped " << precision_name(precision) << ": " << why << "\n";
            continue;
        }
        Engine half(gpu_precision_options(precision)), full(gpu_precision_options(Precision::fp32));
        std::vector<double> h, f;
        for (int s = 0; s < 30; ++s) {
            const Batch b = make_batch(s, 24);
            const StepResult r = half.step(b.images, b.labels);
            h.push_back(r.loss);
            // fp16 scales its loss dynamically by default (from 2^16); bf16 does not.
            if (precision == Precision::fp16) {
                EXPECT_GT(r.loss_scale, 0.f);
                EXPECT_FALSE(r.skipped) << "step " << s;
            } else {
                EXPECT_EQ(r.loss_scale, 0.f);
            }
            f.push_back(full.step(b.images, b.labels).loss);
        }
        EXPECT_NE(h[0], f[0]) << "the half precision computed exactly what float32 did";
        EXPECT_NEAR(h[0], f[0], 0.01 * f[0]);
        EXPECT_LT(mean_loss(h, 25, 30), 0.5 * mean_loss(h, 0, 5)) << "the loss did not fall";
        EXPECT_NEAR(mean_loss(h, 25, 30), mean_loss(f, 25, 30), 0.2 * mean_loss(f, 25, 30));
        for (const auto& p : named_parameters(half.net()))
            EXPECT_EQ(p.parameter->value.dtype(), DType::f32) << p.name << ": the master copy";
    }
}

TEST(CudaEnginePrecision, OverflowIsFoundOnTheGpuAndTheStepSkipped) {
    TANDEM_REQUIRE_GPUS(1);
    const float huge = std::ldexp(1.f, 127);
    Engine e(gpu_precision_options(Precision::fp32, {LossScaleMode::dynamic, huge, 1000}));
    float expected = huge;
    int skipped = 0;
    for (int s = 0; s < 10; ++s) {
        const Batch b = make_batch(s, 24, 100);
        std::vector<std::vector<float>> before;
        for (const auto& p : named_parameters(e.net()))
            before.push_back(p.parameter->value.to_vector());
        const StepResult r = e.step(b.images, b.labels);
        EXPECT_EQ(r.loss_scale, expected) << "step " << s;
        if (!r.skipped) continue;
        ++skipped, expected /= 2;
        std::size_t i = 0;
        for (const auto& p : named_parameters(e.net()))
            EXPECT_EQ(p.parameter->value.to_vector(), before[i++]) << p.name << ", step " << s;
    }
    EXPECT_GT(skipped, 0) << "2^127 never overflowed: the test proves nothing";
    EXPECT_LT(skipped, 10) << "the scale never came down far enough";
}

}  // namespace
}  // namespace tandem::test

// The engine's `precision` option (device/precision.h): bf16 trains like float32 within what
// rounding the products' operands explains, keeps float32 weights, resumes exactly, and is
// refused, naming the device and why, where the device has no bf16 kernels.
#include <gtest/gtest.h>

#include <cmath>

#include "device/cpu/cpu_device.h"
#include "engine/engine.h"
#include "layers/batch_norm2d.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/pool2d.h"
#include "layers/relu.h"
#include "support/expect_error.h"
#include "support/stand_in_gpu.h"
#include "support/temp_dir.h"
#include "support/toy_batch.h"

namespace tandem::test {
namespace {

std::shared_ptr<Sequential> precision_test_net() {
    Conv2dOptions c;
    c.in_channels = 1, c.out_channels = 16, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    Pool2dOptions p;
    p.kernel_h = p.kernel_w = 2;
    return std::make_shared<Sequential>(std::vector<LayerPtr>{
        std::make_shared<Conv2d>(c), std::make_shared<BatchNorm2d>(BatchNorm2dOptions{16}),
        std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(p), std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{16 * 4 * 4, 32, true, "kaiming"}),
        std::make_shared<ReLU>(), std::make_shared<Linear>(LinearOptions{32, 3, true, "kaiming"})});
}

EngineOptions precision_options(Precision precision, std::vector<std::shared_ptr<Device>> devices) {
    EngineOptions o;
    o.net = precision_test_net();
    o.devices = std::move(devices);
    o.optimizer.sgd = SgdOptions{0.05f, 0.9f, 0.f, 1e-4f, true};
    o.seed = 4;
    o.layout = Layout::channels_last;
    o.precision = precision;
    return o;
}

std::shared_ptr<Device> one_thread_cpu(int index) {
    return std::make_shared<CpuDevice>(index, CpuDeviceOptions{std::size_t(1) << 30, 1});
}

std::string bf16_missing() {
    return CpuDevice(0, CpuDeviceOptions{}).precision_unavailable(Precision::bf16);
}

TEST(EnginePrecision, Bf16TrainsAsFloat32DoesWithinRounding) {
    if (const auto why = bf16_missing(); !why.empty()) GTEST_SKIP() << "no bf16 kernels: " << why;
    auto half_options = precision_options(Precision::bf16, {one_thread_cpu(0)});
    auto full_options = precision_options(Precision::fp32, {one_thread_cpu(1)});
    for (auto* o : {&half_options, &full_options}) o->optimizer.sgd.lr = 0.01f;
    Engine half(std::move(half_options)), full(std::move(full_options));
    std::vector<double> h, f;
    for (int s = 0; s < 30; ++s) {
        const Batch b = make_batch(s, 24);
        h.push_back(half.step(b.images, b.labels).loss);
        f.push_back(full.step(b.images, b.labels).loss);
    }
    // The first step's loss comes from the same weights: only the rounding differs.
    EXPECT_NE(h[0], f[0]) << "bf16 computed exactly what float32 did: it was not in effect";
    EXPECT_NEAR(h[0], f[0], 0.01 * f[0]);
    EXPECT_LT(mean_loss(h, 25, 30), 0.5 * mean_loss(h, 0, 5)) << "bf16's loss did not fall";
    EXPECT_NEAR(mean_loss(h, 25, 30), mean_loss(f, 25, 30), 0.2 * mean_loss(f, 25, 30))
        << "bf16's loss strayed from float32's";
    for (const auto& p : named_parameters(half.net()))
        EXPECT_EQ(p.parameter->value.dtype(), DType::f32) << p.name << ": the master copy";
}

TEST(EnginePrecision, Bf16ResumesBitForBitAndItsCheckpointLoadsInFloat32) {
    if (const auto why = bf16_missing(); !why.empty()) GTEST_SKIP() << "no bf16 kernels: " << why;
    TempDir dir;
    const std::string path = (dir.path() / "step3.safetensors").string();
    Engine straight(precision_options(Precision::bf16, {one_thread_cpu(0)}));
    for (int s = 0; s < 6; ++s) straight.step(make_batch(s, 12).images, make_batch(s, 12).labels);
    {
        Engine first_half(precision_options(Precision::bf16, {one_thread_cpu(1)}));
        for (int s = 0; s < 3; ++s)
            first_half.step(make_batch(s, 12).images, make_batch(s, 12).labels);
        first_half.save(path, {});
    }
    Engine resumed(precision_options(Precision::bf16, {one_thread_cpu(2)}));
    resumed.load(path);
    for (int s = 3; s < 6; ++s) resumed.step(make_batch(s, 12).images, make_batch(s, 12).labels);
    const auto a = named_parameters(straight.net()), b = named_parameters(resumed.net());
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_EQ(a[i].parameter->value.to_vector(), b[i].parameter->value.to_vector())
            << a[i].name;

    Engine in_float32(precision_options(Precision::fp32, {one_thread_cpu(3)}));
    in_float32.load(path);
    EXPECT_EQ(in_float32.steps(), 3);
}

// Every group's replica is a clone of the net: each computes in bf16, so two groups of
// 12 images step as one device's 24 do (batch norm per group aside: the net here has none).
TEST(EnginePrecision, Bf16GroupsEqualOneDevice) {
    if (const auto why = bf16_missing(); !why.empty()) GTEST_SKIP() << "no bf16 kernels: " << why;
    const auto plain_net = [] {
        Conv2dOptions c;
        c.in_channels = 1, c.out_channels = 16, c.kernel_h = c.kernel_w = 3;
        c.pad_h = c.pad_w = 1;
        return std::make_shared<Sequential>(std::vector<LayerPtr>{
            std::make_shared<Conv2d>(c), std::make_shared<ReLU>(), std::make_shared<Flatten>(),
            std::make_shared<Linear>(LinearOptions{16 * 8 * 8, 3, true, "kaiming"})});
    };
    auto one = precision_options(Precision::bf16, {one_thread_cpu(0)});
    one.net = plain_net();
    auto two = precision_options(Precision::bf16, {one_thread_cpu(1), one_thread_cpu(2)});
    two.net = plain_net();
    two.parallel.groups = 2;
    auto float32 = precision_options(Precision::fp32, {one_thread_cpu(3), one_thread_cpu(4)});
    float32.net = plain_net();
    float32.parallel.groups = 2;
    Engine a(std::move(one)), b(std::move(two)), c(std::move(float32));
    for (int s = 0; s < 3; ++s) {
        const Batch batch = make_batch(s, 24);
        a.step(batch.images, batch.labels), b.step(batch.images, batch.labels);
        c.step(batch.images, batch.labels);
    }
    const auto wa = named_parameters(a.net()), wb = named_parameters(b.net()),
               wc = named_parameters(c.net());
    double gap_groups = 0, gap_float32 = 0;
    for (std::size_t i = 0; i < wa.size(); ++i) {
        const auto x = wa[i].parameter->value.to_vector(), y = wb[i].parameter->value.to_vector(),
                   z = wc[i].parameter->value.to_vector();
        for (std::size_t j = 0; j < x.size(); ++j) {
            gap_groups = std::max(gap_groups, double(std::fabs(x[j] - y[j])));
            gap_float32 = std::max(gap_float32, double(std::fabs(x[j] - z[j])));
        }
    }
    EXPECT_LT(gap_groups, 1e-5) << "two bf16 groups against one bf16 device";
    EXPECT_GT(gap_float32, 10 * gap_groups) << "float32 groups should stand further off";
}

TEST(EnginePrecision, RefusedNamingTheDeviceAndWhy) {
    const auto gpu = std::make_shared<StandInGpu>(0);
    expect_error<ConfigError>([&] { Engine e(precision_options(Precision::bf16, {gpu})); },
                              "precision = 'bf16' cannot run on cuda:0: the cuda backend trains "
                              "in fp32 only");
    // A net run outside an engine (tandem bench, T.profile) is refused when its kernels are
    // built (the registry's check), the message naming the layer.
    Conv2dOptions c;
    c.in_channels = 1, c.out_channels = 4, c.kernel_h = c.kernel_w = 3;
    auto conv = std::make_shared<Conv2d>(c);
    conv->set_name("conv1");
    Sequential net({conv});
    net.set_precision(Precision::bf16);
    try {
        net.bind(*gpu, {2, 1, 8, 8}, Layout::contiguous);
        ADD_FAILURE() << "bf16 bound on a device without it";
    } catch (const ConfigError& e) {
        const std::string text = e.full_message();
        EXPECT_NE(text.find("cuda:0 cannot compute in bf16: the cuda backend trains in fp32 only"),
                  std::string::npos)
            << text;
        EXPECT_NE(text.find("in layer 1 'conv1' (Conv2d) on cuda:0, bind"), std::string::npos)
            << text;
    }
    // This machine's CPU either has the kernels (and trains) or is refused by name.
    if (!bf16_missing().empty())
        expect_error<ConfigError>(
            [&] { Engine e(precision_options(Precision::bf16, {one_thread_cpu(0)})); },
            "has neither AVX512_BF16 nor AMX");
}

TEST(EnginePrecision, ClonesKeepTheLayersPrecision) {
    auto net = precision_test_net();
    net->set_precision(Precision::bf16);
    const auto copy = net->clone();
    for (auto* layer : copy->children())
        EXPECT_EQ(layer->precision(), Precision::bf16) << layer->label();
}

}  // namespace
}  // namespace tandem::test

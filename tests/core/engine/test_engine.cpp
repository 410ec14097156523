#include <gtest/gtest.h>

#include <fstream>

#include "base/rng.h"
#include "device/cpu/cpu_device.h"
#include "engine/engine.h"
#include "io/safetensors.h"
#include "layers/batch_norm2d.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/pool2d.h"
#include "layers/relu.h"
#include "support/temp_dir.h"
#include "support/toy_batch.h"

namespace tandem::test {
namespace {

std::shared_ptr<Sequential> small_net() {
    Conv2dOptions c;
    c.in_channels = 1, c.out_channels = 4, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    c.bias = false;
    Pool2dOptions p;
    p.kernel_h = p.kernel_w = 2;
    return std::make_shared<Sequential>(std::vector<LayerPtr>{
        std::make_shared<Conv2d>(c), std::make_shared<BatchNorm2d>(BatchNorm2dOptions{4}),
        std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(p), std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{4 * 4 * 4, 16, true, "kaiming"}),
        std::make_shared<ReLU>(), std::make_shared<Dropout>(0.25f),
        std::make_shared<Linear>(LinearOptions{16, 3, true, "kaiming"})});
}

using test::make_batch;
Batch make_batch(int step) {
    return make_batch(step, 12);
}

EngineOptions options_for(std::shared_ptr<Device> device, std::uint64_t seed) {
    EngineOptions o;
    o.net = small_net();
    o.devices = {std::move(device)};
    o.optimizer.sgd = SgdOptions{0.05f, 0.9f, 0.f, 1e-4f, true};
    o.schedule = std::make_shared<CosineSchedule>(0.05f, 20, 0.f);
    o.seed = seed;
    o.layout = Layout::channels_last;
    return o;
}

std::shared_ptr<Device> cpu(int index, std::size_t memory = std::size_t(1) << 30) {
    return std::make_shared<CpuDevice>(index, CpuDeviceOptions{memory, 1});
}

std::map<std::string, std::vector<float>> weights(Engine& e) {
    std::map<std::string, std::vector<float>> w;
    for (auto& p : named_parameters(e.net())) w[p.name] = p.parameter->value.to_vector();
    for (auto& b : named_buffers(e.net())) w[b.name] = b.parameter->value.to_vector();
    return w;
}

TEST(Engine, LossFalls) {
    Engine engine(options_for(cpu(0), 3));
    double first = 0, last = 0;
    for (int s = 0; s < 20; ++s) {
        const Batch b = make_batch(s, 24);
        const StepResult r = engine.step(b.images, b.labels);
        if (s < 3) first += r.loss;
        if (s >= 17) last += r.loss;
    }
    EXPECT_LT(last, 0.7 * first) << "mean loss of the first 3 steps " << first / 3
                                 << ", of the last 3 " << last / 3;
}

TEST(Engine, ResumeContinuesBitForBit) {
    TempDir dir;
    const std::string path = (dir.path() / "step3.safetensors").string();
    Engine straight(options_for(cpu(0), 5));
    for (int s = 0; s < 6; ++s) straight.step(make_batch(s).images, make_batch(s).labels);

    {
        Engine first_half(options_for(cpu(1), 5));
        for (int s = 0; s < 3; ++s) first_half.step(make_batch(s).images, make_batch(s).labels);
        first_half.save(path, {{"epoch", "1"}});
    }
    Engine resumed(options_for(cpu(2), 77));  // another seed: everything must come from the file
    const auto meta = resumed.load(path);
    EXPECT_EQ(meta.at("epoch"), "1");
    EXPECT_EQ(resumed.steps(), 3);
    for (int s = 3; s < 6; ++s) resumed.step(make_batch(s).images, make_batch(s).labels);

    const auto a = weights(straight), b = weights(resumed);
    ASSERT_EQ(a.size(), b.size());
    for (const auto& [name, values] : a) EXPECT_EQ(values, b.at(name)) << name;
}

// A checkpoint tensor of the right shape but another dtype, or a broken optimizer state, is
// refused naming the file and the tensor, and the engine keeps its weights.
TEST(Engine, LoadNamesTheFileAndTensorOfABadEntry) {
    TempDir dir;
    const std::string path = (dir.path() / "ck.safetensors").string();
    Engine engine(options_for(cpu(0), 5));
    engine.step(make_batch(0).images, make_batch(0).labels);
    engine.save(path);
    const auto before = weights(engine);
    auto rewrite = [&](const std::string& name, const Tensor& replacement) {
        SafetensorsContents file = load_safetensors(path, host_device());
        for (auto& [key, tensor] : file.tensors)
            if (key == name) tensor = replacement;
        const std::string changed =
            (dir.path() / ("bad_" + std::to_string(name.size()) + ".safetensors")).string();
        save_safetensors(changed, file.tensors, file.metadata);
        return changed;
    };
    const std::string as_ints =
        rewrite("model.conv1.weight", Tensor::zeros({4, 1, 3, 3}, host_device(), DType::i32));
    try {
        engine.load(as_ints);
        FAIL() << "took an i32 weight";
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find(
                      as_ints + ": 'model.conv1.weight' holds I32 values, the net's are F32"),
                  std::string::npos)
            << e.what();
    }
    const std::string bad_state =
        rewrite("optim.momentum.fc1.bias", Tensor::zeros({3}, host_device()));
    try {
        engine.load(bad_state);
        FAIL() << "took a momentum buffer of the wrong shape";
    } catch (const DataError& e) {
        const std::string message = e.full_message();
        EXPECT_NE(message.find("SGD state: entry 'momentum.fc1.bias'"), std::string::npos)
            << message;
        EXPECT_NE(message.find("in the optimizer state of " + bad_state), std::string::npos)
            << message;
    }
    EXPECT_EQ(weights(engine), before);
}

TEST(Engine, ShapeMismatchNamesTheLayerAndTheEngineGoesOn) {
    Engine engine(options_for(cpu(0), 1));
    Tensor wrong = Tensor::zeros({2, 3, 8, 8}, host_device());
    Tensor labels = Tensor::zeros({2}, host_device(), DType::i32);
    try {
        engine.step(wrong, labels);
        FAIL() << "expected ShapeError";
    } catch (const ShapeError& e) {
        const std::string msg = e.full_message();
        EXPECT_NE(msg.find("'conv1' (Conv2d)"), std::string::npos) << msg;
        EXPECT_NE(msg.find("3 channels"), std::string::npos) << msg;
    }
    const Batch b = make_batch(0);
    EXPECT_NO_THROW(engine.step(b.images, b.labels));
}

TEST(Engine, PrepareRefusesSamplesTheNetCannotTake) {
    Engine engine(options_for(cpu(0), 1));
    try {
        engine.prepare(Shape{8, 8}, 4);  // a convolution wants C x H x W
        FAIL() << "prepare took 8x8 samples for a conv net";
    } catch (const ShapeError& e) {
        const std::string what = e.full_message();
        EXPECT_NE(what.find("input must be N x C x H x W, got 4x8x8"), std::string::npos) << what;
        EXPECT_NE(what.find("prepare: samples of shape 8x8 do not fit the net"), std::string::npos)
            << what;
    }
    EXPECT_THROW(engine.prepare(Shape{1, 8, 8}, 0), ConfigError);
    engine.prepare(Shape{1, 8, 8}, 4);
    const Batch b = make_batch(0);  // and the engine trains as before
    EXPECT_GT(engine.step(b.images, b.labels).samples, 0);
}

TEST(Engine, OutOfMemoryNamesDeviceRequestAndCap) {
    Engine engine(
        options_for(cpu(4, 256 << 10), 1));  // 256 KiB: the weights fit, a big batch does not
    const Batch b = make_batch(0, 2000);
    try {
        engine.step(b.images, b.labels);
        FAIL() << "expected DeviceMemoryError";
    } catch (const DeviceMemoryError& e) {
        const std::string msg = e.full_message();
        EXPECT_NE(msg.find("cpu:4 out of memory"), std::string::npos) << msg;
        EXPECT_NE(msg.find("cap 256.0 KiB"), std::string::npos) << msg;
    }
    const Batch small = make_batch(0, 4);
    EXPECT_NO_THROW(engine.step(small.images, small.labels));
}

TEST(Engine, TruncatedCheckpointIsRefusedAndChangesNothing) {
    TempDir dir;
    const std::string good = (dir.path() / "good.safetensors").string();
    const std::string bad = (dir.path() / "bad.safetensors").string();
    Engine engine(options_for(cpu(0), 1));
    engine.step(make_batch(0).images, make_batch(0).labels);
    engine.save(good);
    {
        std::ifstream in(good, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), {});
        std::ofstream(bad, std::ios::binary)
            .write(bytes.data(), std::streamsize(bytes.size() - 100));
    }
    const auto before = weights(engine);
    try {
        engine.load(bad);
        FAIL() << "expected DataError";
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
    EXPECT_EQ(weights(engine), before);
    EXPECT_EQ(engine.steps(), 1);
    EXPECT_NO_THROW(engine.load(good));
}

TEST(Engine, LoadRefusesACheckpointOfAnotherNet) {
    TempDir dir;
    const std::string path = (dir.path() / "other.safetensors").string();
    save_safetensors(path, {{"model.conv1.weight", Tensor::zeros({2, 2}, host_device())}},
                     {{"format", "tandem-checkpoint-1"}, {"step", "0"}});
    Engine engine(options_for(cpu(0), 1));
    EXPECT_THROW(engine.load(path), DataError);
}

}  // namespace
}  // namespace tandem::test

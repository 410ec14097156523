// The CPU's own channels-last batch normalisation (batch_norm_nhwc.cpp) against the reference
// kernel (double sums, two passes): channel counts in whole and partial vectors, pixel counts
// across its 64-pixel blocks and uneven thread shares, one and two threads, training and
// evaluation, alone and with the ReLU fused; and a channel whose mean is far from zero beside
// its spread, where sums of squares taken about zero would cancel.
#include <gtest/gtest.h>

#include <cmath>

#include "device/cpu/cpu_device.h"
#include "layers/batch_norm2d.h"
#include "layers/relu.h"
#include "layers/sequential.h"
#include "support/close.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

std::shared_ptr<BatchNorm2d> bn_with(std::int64_t channels, const std::string& impl) {
    auto bn = std::make_shared<BatchNorm2d>(BatchNorm2dOptions{channels});
    bn->set_kernel_impl(impl);
    bn->parameters()[0]->value.copy_from(random_tensor({channels}, host_device(), 51, 0.5f, 1.5f));
    bn->parameters()[1]->value.copy_from(random_tensor({channels}, host_device(), 52, -0.5f, 0.5f));
    bn->buffers()[0]->value.copy_from(random_tensor({channels}, host_device(), 53, -0.5f, 0.5f));
    bn->buffers()[1]->value.copy_from(random_tensor({channels}, host_device(), 54, 0.5f, 2.f));
    return bn;
}

// Channel c at mean 0.3 c and spread 1 + c; channel 0 at mean 1000 and spread 0.01.
Tensor skewed_input(const Shape& shape, Device& device) {
    std::vector<float> v = random_tensor(shape, device, 55).to_vector();  // NCHW order
    const std::int64_t plane = shape[2] * shape[3];
    for (std::size_t i = 0; i < v.size(); ++i) {
        const auto c = std::int64_t(i) / plane % shape[1];
        v[i] = c == 0 ? 1000.f + 0.01f * v[i] : v[i] * float(1 + c) + 0.3f * float(c);
    }
    return Tensor::from_vector(shape, device, v, Layout::channels_last);
}

struct Step {
    std::vector<std::vector<float>> values;  // y, dx, gamma's and beta's gradients, running stats
};

// One forward and backward of `net` (whose first layer is `bn`) on `device`.
Step step(Layer& net, BatchNorm2d& bn, Mode mode, const Tensor& x, const Tensor& dy,
          Device& device) {
    Tape tape;
    Pass pass{device, mode, 0, tape, 0};
    const Tensor y = net.forward(x, pass);
    const Tensor dx = net.backward(x, dy, pass);
    return {{y.to_vector(), dx.to_vector(), bn.parameters()[0]->grad.to_vector(),
             bn.parameters()[1]->grad.to_vector(), bn.buffers()[0]->value.to_vector(),
             bn.buffers()[1]->value.to_vector()}};
}

TEST(BatchNormCpu, MatchesTheReferenceAcrossVectorsBlocksAndThreads) {
    const char* names[] = {"y", "dx", "gamma grad", "beta grad", "running mean", "running var"};
    for (int threads : {1, 2})
        for (std::int64_t channels : {5, 16, 21, 64})
            for (const Shape& shape : {Shape{3, channels, 7, 5}, Shape{2, channels, 8, 8}})
                for (Mode mode : {Mode::train, Mode::eval})
                    for (bool with_relu : {false, true}) {
                        // A ReLU's backward in evaluation has nothing kept to go by.
                        if (mode == Mode::eval && with_relu) continue;
                        SCOPED_TRACE(std::to_string(threads) + " threads, " + shape.to_string() +
                                     (mode == Mode::train ? ", train" : ", eval") +
                                     (with_relu ? ", with ReLU" : ""));
                        CpuDevice device(60 + threads, CpuDeviceOptions{0, threads});
                        const Tensor x = skewed_input(shape, device);
                        const Tensor dy =
                            random_tensor(shape, device, 56, -1.f, 1.f, Layout::channels_last);
                        // The pair in a Sequential, which fuses it; the layer alone else (a
                        // Sequential keeps nothing for backward in evaluation).
                        auto run = [&](const std::string& impl) {
                            auto bn = bn_with(channels, impl);
                            if (!with_relu) return step(*bn, *bn, mode, x, dy, device);
                            Sequential net({bn, std::make_shared<ReLU>()});
                            return step(net, *bn, mode, x, dy, device);
                        };
                        const Step cpu = run("cpu"), reference = run("reference");
                        for (std::size_t k = 0; k < cpu.values.size(); ++k)
                            expect_close(cpu.values[k], reference.values[k], 2e-4, names[k]);
                    }
}

// The fused kernel is the one that ran (its ReLU's mask: the shift b, C floats).
TEST(BatchNormCpu, TheFusedReluKeepsItsShift) {
    CpuDevice device(70, CpuDeviceOptions{0, 1});
    auto bn = bn_with(21, "cpu");
    Sequential net({bn, std::make_shared<ReLU>()});
    const Shape shape{2, 21, 3, 3};
    Tape tape;
    Pass pass{device, Mode::train, 0, tape, 0};
    ASSERT_TRUE(bn->takes_relu(pass));
    net.forward(skewed_input(shape, device), pass);
    const auto kept = tape.get(bn.get());
    ASSERT_EQ(kept.size(), 3u);
    EXPECT_EQ(kept[2].numel(), std::int64_t(21 * sizeof(float)));
}

}  // namespace
}  // namespace tandem::test

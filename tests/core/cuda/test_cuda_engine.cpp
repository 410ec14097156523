// The engine on GPUs computes what it computes on the CPU: a small conv / batch-norm / pool /
// linear / dropout net trained a few steps on one GPU against one CPU device, as two pipeline
// stages on two GPUs (activations and gradients crossing through the transfers) and as two
// groups on two GPUs (gradients through NCCL) against one GPU, and in deterministic mode bit
// for bit. Skipped, saying why, without the GPUs.
#include <map>

#include "device/cpu/cpu_device.h"
#include "device/cuda/cuda_backend.h"
#include "engine/engine.h"
#include "layers/batch_norm2d.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/pool2d.h"
#include "layers/relu.h"
#include "support/cuda_parity.h"
#include "support/toy_batch.h"

namespace tandem::test {
namespace {

std::shared_ptr<Sequential> gpu_net() {
    Conv2dOptions c;
    c.in_channels = 1, c.out_channels = 4, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    Pool2dOptions p;
    p.kernel_h = p.kernel_w = 2;
    return std::make_shared<Sequential>(std::vector<LayerPtr>{
        std::make_shared<Conv2d>(c), std::make_shared<BatchNorm2d>(BatchNorm2dOptions{4}),
        std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(p), std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{4 * 4 * 4, 16, true, "kaiming"}),
        std::make_shared<ReLU>(), std::make_shared<Dropout>(0.25f),
        std::make_shared<Linear>(LinearOptions{16, 3, true, "kaiming"})});
}

// How train_on() lays the net out: one stage, group and micro-batch by default (batch norm then
// sees the same samples as on one device).
struct TrainingRun {
    int stages = 1;
    Layout layout = Layout::contiguous;
    int groups = 1;
    int micro_batches = 1;
    bool buffers = true;  // return the batch-norm buffers with the weights
    BatchNormMode batch_norm = BatchNormMode::micro;
    bool deterministic = false;
};

Weights train_on(std::vector<std::shared_ptr<Device>> devices, const TrainingRun& run) {
    EngineOptions o;
    o.net = gpu_net();
    o.devices = std::move(devices);
    o.optimizer.sgd = SgdOptions{0.05f, 0.9f, 0.f, 1e-4f, true};
    o.seed = 11;
    o.layout = run.layout;
    o.parallel.groups = run.groups;
    o.parallel.stages = run.stages;
    o.parallel.micro_batches = run.micro_batches;
    o.parallel.bucket_bytes = 256;  // several buckets, reduced during backward
    o.parallel.batch_norm = run.batch_norm;
    o.parallel.deterministic = run.deterministic;
    Engine engine(o);
    for (int s = 0; s < 3; ++s) {
        const Batch b = make_batch(s, 12);
        engine.step(b.images, b.labels);
    }
    return weights_of(engine.net(), run.buffers);
}

TEST(CudaEngine, OneGpuTrainsLikeTheCpu) {
    TANDEM_REQUIRE_GPUS(1);
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        SCOPED_TRACE(layout_name(layout));
        expect_same_weights(train_on({unowned(gpu())}, {.layout = layout}),
                            train_on({std::make_shared<CpuDevice>(0, CpuDeviceOptions{1 << 30, 1})},
                                     {.layout = layout}));
    }
}

TEST(CudaEngine, TwoStagesOnTwoGpusTrainLikeOne) {
    TANDEM_REQUIRE_GPUS(2);
    expect_same_weights(
        train_on({unowned(cuda_test_device(0)), unowned(cuda_test_device(1))}, {.stages = 2}),
        train_on({unowned(cuda_test_device(0))}, {}));
}

// Two pipeline stages on two devices that share one GPU (each with its own streams, allocator
// and worker thread), two micro-batches in flight: the transfers between devices and their
// ordering by events, where a machine has only one GPU. Against one device, same micro-batches.
TEST(CudaEngine, TwoStagesOnTwoDevicesOfOneGpuTrainLikeOne) {
    TANDEM_REQUIRE_GPUS(1);
    const std::shared_ptr<Device> second = own_cuda_device();
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        SCOPED_TRACE(layout_name(layout));
        expect_same_weights(
            train_on({unowned(gpu()), second}, {.stages = 2, .layout = layout, .micro_batches = 2}),
            train_on({unowned(gpu())}, {.layout = layout, .micro_batches = 2}));
    }
}

// Two groups on two GPUs, their gradients all-reduced through NCCL bucket by bucket during
// backward, against one GPU cutting the batch into the same two halves as micro-batches (batch
// norm normalises each half by itself either way). Running statistics differ (each replica
// keeps its own), so the weights are compared.
TEST(CudaEngine, TwoGroupsOnTwoGpusTrainLikeOne) {
    TANDEM_REQUIRE_GPUS(2);
    expect_same_weights(
        train_on({unowned(cuda_test_device(0)), unowned(cuda_test_device(1))},
                 {.groups = 2, .buffers = false}),
        train_on({unowned(cuda_test_device(0))}, {.micro_batches = 2, .buffers = false}));
}

// Two groups on two devices of one GPU, where NCCL cannot go (one rank per GPU): their buckets
// packed on the GPU, reduced during backward through the host, against one device running the
// same halves as micro-batches; and synchronised batch norm the same way against the CPU.
TEST(CudaEngine, TwoGroupsOnTwoDevicesOfOneGpuTrainLikeOne) {
    TANDEM_REQUIRE_GPUS(1);
    const std::shared_ptr<Device> second = own_cuda_device();
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        SCOPED_TRACE(layout_name(layout));
        expect_same_weights(
            train_on({unowned(gpu()), second}, {.layout = layout, .groups = 2, .buffers = false}),
            train_on({unowned(gpu())}, {.layout = layout, .micro_batches = 2, .buffers = false}));
        expect_same_weights(train_on({unowned(gpu()), second}, {.layout = layout,
                                                                .groups = 2,
                                                                .micro_batches = 2,
                                                                .batch_norm = BatchNormMode::sync}),
                            train_on({std::make_shared<CpuDevice>(0, CpuDeviceOptions{1 << 30, 1})},
                                     {.layout = layout}));
    }
}

// Synchronised batch norm on GPUs: two groups x two micro-batches, every micro-batch normalised
// with the statistics of the whole batch (reduced through NCCL), against one CPU device on the
// whole batch: the same weights and running statistics.
TEST(CudaEngine, SyncBatchNormOnTwoGpusTrainsLikeOneCpuDevice) {
    TANDEM_REQUIRE_GPUS(2);
    expect_same_weights(
        train_on({unowned(cuda_test_device(0)), unowned(cuda_test_device(1))},
                 {.groups = 2, .micro_batches = 2, .batch_norm = BatchNormMode::sync}),
        train_on({std::make_shared<CpuDevice>(0, CpuDeviceOptions{1 << 30, 1})}, {}));
}

// Deterministic mode on GPUs: two groups, each on its own device of one GPU, their gradients
// summed in the canonical order through the host (no NCCL, which also cannot put two ranks on
// one GPU), give the bits of one device running the same two halves as micro-batches; and a
// run repeats bit for bit. The devices are made alike (same cap, so the same workspace budget
// and algorithm choice) and afresh (deterministic mode stays on a device).
TEST(CudaEngine, DeterministicTwoGroupsOnOneGpuGiveTheBitsOfOneDevice) {
    TANDEM_REQUIRE_GPUS(1);
    CudaDeviceOptions options;
    options.benchmark = true;  // deterministic mode takes the heuristic order even so
    const std::shared_ptr<Device> a = own_cuda_device(options), b = own_cuda_device(options);
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        SCOPED_TRACE(layout_name(layout));
        const TrainingRun two_groups{
            .layout = layout, .groups = 2, .buffers = false, .deterministic = true};
        const TrainingRun two_micro_batches{
            .layout = layout, .micro_batches = 2, .buffers = false, .deterministic = true};
        const auto want = train_on({a}, two_micro_batches);
        EXPECT_EQ(train_on({a, b}, two_groups), want);
        EXPECT_EQ(train_on({b}, two_micro_batches), want);
        expect_same_weights(want,
                            train_on({std::make_shared<CpuDevice>(0, CpuDeviceOptions{1 << 30, 1})},
                                     two_micro_batches));
    }
}

}  // namespace
}  // namespace tandem::test

// Communicators chosen by the memory the replicas hold: shared memory for CPU devices; for
// devices the host cannot read (GPUs, played here by a stand-in that keeps its memory on the
// host but says it does not), NCCL, or shared memory staged through the host in deterministic
// mode and for devices that share a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "base/error.h"
#include "device/allocator.h"
#include "device/cpu/cpu_device.h"
#include "device/worker.h"
#include "engine/engine.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "parallel/communicator.h"
#include "support/stand_in_gpu.h"
#include "tensor/tensor.h"

namespace tandem::test {
namespace {

void expect_comm_config_error(const std::function<void()>& run, const std::string& words) {
    try {
        run();
        FAIL() << "expected a ConfigError saying '" << words << "'";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
}

TEST(DeviceCommunicator, CpuReplicasShareMemory) {
    CpuDevice a(0, CpuDeviceOptions{0, 1}), b(1, CpuDeviceOptions{0, 1});
    const auto comm = make_device_communicator({&a, &b});
    ASSERT_EQ(comm->size(), 2);
    std::vector<float> x{1, 2}, y{10, 20};
    std::thread other([&] { comm->all_reduce_sum(1, y.data(), y.size(), ReduceAlgorithm::ring); });
    comm->all_reduce_sum(0, x.data(), x.size(), ReduceAlgorithm::ring);
    other.join();
    EXPECT_EQ(x, (std::vector<float>{11, 22}));
    EXPECT_EQ(y, x);
}

TEST(DeviceCommunicator, KindsDoNotMix) {
    CpuDevice cpu(0, CpuDeviceOptions{0, 1});
    StandInGpu gpu(0);
    expect_comm_config_error(
        [&] {
            make_device_communicator({&cpu, &gpu});
        },
        "devices of one kind");
    expect_comm_config_error([&] { make_device_communicator({}); }, "at least one rank");
}

// NCCL takes one rank per GPU: replicas on devices made on one GPU sum through the host.
TEST(DeviceCommunicator, ReplicasSharingAGpuReduceThroughTheHost) {
    StandInGpu a(0), b(0);
    const auto comm = make_device_communicator({&a, &b});
    ASSERT_EQ(comm->size(), 2);
    Tensor x = Tensor::from_vector({2}, a, std::vector<float>{1, 2});
    Tensor y = Tensor::from_vector({2}, b, std::vector<float>{10, 20});
    a.bytes_from_host = b.bytes_from_host = 0;
    std::thread other(
        [&] { comm->all_reduce_sum(1, static_cast<float*>(y.raw()), 2, ReduceAlgorithm::ring); });
    comm->all_reduce_sum(0, static_cast<float*>(x.raw()), 2, ReduceAlgorithm::ring);
    other.join();
    EXPECT_EQ(x.to_vector(), (std::vector<float>{11, 22}));
    EXPECT_EQ(y.to_vector(), x.to_vector());
    EXPECT_EQ(a.bytes_from_host, 2 * sizeof(float));  // the sum came back through the copy
}

TEST(DeviceCommunicator, ACopyWithinNeedsTheBackendsOwn) {
    StandInGpu gpu(0);
    float a = 1, b = 0;
    EXPECT_THROW(gpu.copy_within(&b, &a, sizeof a), BackendError);
    CpuDevice cpu(0, CpuDeviceOptions{0, 1});
    cpu.copy_within(&b, &a, sizeof a);
    EXPECT_EQ(b, 1);
}

// Deterministic mode on GPUs: the engine builds (the replicas reduce through the host, see
// CommunicatorStaged.*) and puts its devices in deterministic mode, for the kernels to choose by.
TEST(DeviceCommunicator, DeterministicGpuReplicasAreTakenAndTheirDevicesToldSo) {
    auto options = [](bool deterministic) {
        EngineOptions o;
        o.net = std::make_shared<Sequential>(
            std::vector<LayerPtr>{std::make_shared<Flatten>(),
                                  std::make_shared<Linear>(LinearOptions{4, 2, true, "kaiming"})});
        o.devices = {std::make_shared<StandInGpu>(0), std::make_shared<StandInGpu>(1)};
        o.parallel.groups = 2;
        o.parallel.deterministic = deterministic;
        return o;
    };
    EngineOptions on = options(true);
    Engine engine(on);
    for (const auto& d : on.devices) EXPECT_TRUE(d->deterministic()) << d->name();
    EngineOptions off = options(false);
    off.parallel.groups = 1;
    off.devices.resize(1);
    Engine plain(off);
    EXPECT_FALSE(off.devices[0]->deterministic());
}

}  // namespace
}  // namespace tandem::test

// CudaDevice on a GPU: the caching allocator's cap, peak and out-of-memory text (the CPU
// allocator's), host round trips through the pinned staging buffer and from the GPU's pinned
// host memory, transfers between GPUs
// (peer or staged) and with the host. Skipped, saying why, without a GPU.
#include <cstring>
#include <thread>

#include "device/cuda/cuda_backend.h"
#include "device/cuda/cuda_device.h"
#include "parallel/transfer.h"
#include "support/cuda_parity.h"

namespace tandem::test {
namespace {

TEST(CudaAllocator, CapPeakAndOutOfMemoryText) {
    TANDEM_REQUIRE_GPUS(1);
    CudaDeviceOptions o;
    o.memory = std::size_t(1) << 20;
    auto device = make_cuda_device(0, o);
    Allocator& a = device->allocator();
    {
        Tensor t = Tensor::empty({128 * 1024}, *device);  // 512 KiB
        EXPECT_EQ(a.stats().in_use, std::size_t(512) << 10);
        try {
            Tensor u = Tensor::empty({192 * 1024}, *device);  // 768 KiB more
            ADD_FAILURE() << "the cap was not enforced";
        } catch (const DeviceMemoryError& e) {
            EXPECT_EQ(std::string(e.what()),
                      "cuda:0 out of memory: requested 768.0 KiB, in use 512.0 KiB, cap 1.0 MiB");
        }
    }
    const MemoryStats s = a.stats();
    EXPECT_EQ(s.in_use, 0u);
    EXPECT_EQ(s.peak, std::size_t(512) << 10);
    EXPECT_EQ(s.cached, std::size_t(512) << 10);  // kept for reuse
    Tensor again = Tensor::empty({128 * 1024}, *device);
    EXPECT_EQ(a.stats().cached, 0u) << "the cached block was reused";
    a.release_cache();
}

TEST(CudaDevice, HostRoundTripsThroughStaging) {
    TANDEM_REQUIRE_GPUS(1);
    // Larger than the 8 MiB staging buffer, and an odd size.
    for (std::int64_t n : {1, 1000, 3 * 1024 * 1024 + 7}) {
        const Tensor x = random_tensor({n}, cpu(), std::uint64_t(n));
        const Tensor g = x.to(gpu());
        EXPECT_EQ(g.to_vector(), x.to_vector()) << n;
    }
    const Tensor z = Tensor::zeros({5, 5}, gpu());
    EXPECT_EQ(z.to_vector(), std::vector<float>(25, 0.f));
}

TEST(CudaDevice, PinnedHostMemoryCopiesInOneStep) {
    TANDEM_REQUIRE_GPUS(1);
    Device* pinned = gpu().pinned_host();
    ASSERT_NE(pinned, nullptr);
    EXPECT_TRUE(pinned->host_accessible());
    EXPECT_EQ(pinned->name(), "cuda:0 pinned host");
    // Larger than the 8 MiB staging buffer, and an odd size: one copy each way all the same.
    for (std::int64_t n : {1, 1000, 3 * 1024 * 1024 + 7}) {
        const Tensor x = random_tensor({n}, cpu(), std::uint64_t(n));
        const std::size_t bytes = x.nbytes();
        Tensor host = Tensor::empty({n}, *pinned);
        std::memcpy(host.raw(), x.raw(), bytes);
        EXPECT_TRUE(is_pinned_host_memory(host.raw()));
        EXPECT_FALSE(is_pinned_host_memory(x.raw())) << "ordinary host memory is not pinned";
        Tensor g = Tensor::empty({n}, gpu());
        gpu().copy_from_host(g.raw(), host.raw(), bytes);
        EXPECT_EQ(g.to_vector(), x.to_vector()) << n;
        Tensor back = Tensor::empty({n}, *pinned);
        gpu().copy_to_host(back.raw(), g.raw(), bytes);
        EXPECT_EQ(back.to_vector(), x.to_vector()) << n;
    }
}

TEST(CudaDevice, WorkerThreadRunsKernels) {
    TANDEM_REQUIRE_GPUS(1);
    const Tensor x = random_tensor({4096}, cpu(), 40);
    Tensor g = x.to(gpu());
    gpu().worker().run([&] { tensor_ops(gpu()).scale(g, 2.f); });
    auto v = x.to_vector();
    for (auto& e : v) e *= 2.f;
    EXPECT_EQ(g.to_vector(), v);
}

TEST(CudaTransfer, BetweenHostAndGpu) {
    TANDEM_REQUIRE_GPUS(1);
    const Tensor x = random_tensor({2, 3, 4, 5}, cpu(), 41, -1, 1, Layout::channels_last);
    const Tensor g = transfer(x, gpu());
    EXPECT_EQ(&g.device(), &gpu());
    EXPECT_EQ(g.layout(), Layout::channels_last);
    const Tensor back = transfer(g, cpu());
    EXPECT_EQ(back.to_vector(), x.to_vector());
}

TEST(CudaTransfer, BetweenGpus) {
    TANDEM_REQUIRE_GPUS(2);
    auto& a = static_cast<CudaDevice&>(cuda_test_device(0));
    auto& b = static_cast<CudaDevice&>(cuda_test_device(1));
    std::printf("[ info     ] cuda:0 -> cuda:1 %s\n",
                b.peer_access(a) ? "peer to peer" : "staged through pinned host memory");
    const Tensor x = random_tensor({8, 3, 16, 16}, cpu(), 42);
    const Tensor on_a = x.to(a);
    // A micro-batch view (an offset into the storage) travels as itself.
    const Tensor part = on_a.narrow_batch(3, 4);
    const Tensor on_b = transfer(part, b);
    EXPECT_EQ(&on_b.device(), &b);
    EXPECT_EQ(on_b.to_vector(), x.narrow_batch(3, 4).to_vector());
    // Kernels queued on the sender before the transfer are ordered before the copy.
    Tensor big = random_tensor({1 << 20}, cpu(), 43).to(a);
    tensor_ops(a).scale(big, 3.f);
    const Tensor moved = transfer(big, b);
    EXPECT_EQ(moved.to_vector(), big.to_vector());
}

}  // namespace
}  // namespace tandem::test

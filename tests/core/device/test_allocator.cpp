#include <gtest/gtest.h>

#include "base/format.h"
#include "device/cpu/cpu_device.h"
#include "tensor/tensor.h"

namespace tandem {
namespace {

TEST(Allocator, RefusesPastCapNamingDeviceRequestInUseAndCap) {
    CpuDevice device(3, CpuDeviceOptions{1 << 20, 1});
    Tensor a = Tensor::empty({1000, 100}, device);  // 400,000 bytes
    try {
        Tensor b = Tensor::empty({1000, 200}, device);
        FAIL() << "expected DeviceMemoryError";
    } catch (const DeviceMemoryError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("cpu:3 out of memory"), std::string::npos) << msg;
        EXPECT_NE(msg.find("requested 781.2 KiB"), std::string::npos) << msg;
        EXPECT_NE(msg.find("cap 1.0 MiB"), std::string::npos) << msg;
    }
    // The failed request changed nothing: the device still serves what fits.
    Tensor c = Tensor::empty({100, 100}, device);
    EXPECT_LE(device.allocator().stats().in_use, std::size_t(1) << 20);
}

TEST(Allocator, TracksPeakAndReusesFreedBlocks) {
    CpuDevice device(0, CpuDeviceOptions{64 << 20, 1});
    auto& alloc = device.allocator();
    {
        Tensor a = Tensor::empty({1 << 20}, device);
        EXPECT_EQ(alloc.stats().in_use, std::size_t(4) << 20);
    }
    EXPECT_EQ(alloc.stats().in_use, 0u);
    EXPECT_EQ(alloc.stats().peak, std::size_t(4) << 20);
    EXPECT_EQ(alloc.stats().cached, std::size_t(4) << 20);
    Tensor b = Tensor::empty({1 << 20}, device);  // served from the cache
    EXPECT_EQ(alloc.stats().cached, 0u);
    alloc.reset_peak();
    EXPECT_EQ(alloc.stats().peak, std::size_t(4) << 20);
}

TEST(Allocator, ReleasesCacheBeforeRefusing) {
    CpuDevice device(0, CpuDeviceOptions{10 << 20, 1});
    { Tensor a = Tensor::empty({2 << 20}, device); }  // 8 MiB, now cached
    Tensor b = Tensor::empty({1 << 20, 2}, device);   // another 8 MiB block of another size
    EXPECT_EQ(device.allocator().stats().in_use, std::size_t(8) << 20);
}

TEST(ParseBytes, UnitsAndErrors) {
    EXPECT_EQ(parse_bytes("512MB"), std::size_t(512) << 20);
    EXPECT_EQ(parse_bytes("2GiB"), std::size_t(2) << 30);
    EXPECT_EQ(parse_bytes("4096"), 4096u);
    EXPECT_THROW(parse_bytes("lots"), ConfigError);
    EXPECT_THROW(parse_bytes("12XB"), ConfigError);
}

}  // namespace
}  // namespace tandem

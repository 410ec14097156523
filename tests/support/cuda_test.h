// The one place that decides whether a CUDA test can run: GPU tests start with
// TANDEM_REQUIRE_GPUS(n), which skips with the reason ("no CUDA device: ..." from
// backends/backends.h, or how many GPUs there are) when fewer than n GPUs are usable. The test
// binary and its list of tests are then the same on every machine.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "device/device.h"
#if TANDEM_CUDA
#include "device/cuda/cuda_backend.h"
#endif

namespace tandem::test {

// Empty when `needed` GPUs are present; otherwise why the test cannot run.
std::string cuda_skip_reason(int needed);

#if TANDEM_CUDA
// GPU `index` as a device shared by the tests (made on first use, never destroyed: the CUDA
// runtime may be gone by the time static destructors run).
Device& cuda_test_device(int index);
// A device of the test's own on GPU 0, beside the shared one (several devices on one GPU, or
// options the shared one lacks); capped at 1 GiB unless the options say otherwise.
std::shared_ptr<Device> own_cuda_device(CudaDeviceOptions options = {});
#endif

}  // namespace tandem::test

#define TANDEM_REQUIRE_GPUS(n)                                                         \
    do {                                                                               \
        if (const std::string why = ::tandem::test::cuda_skip_reason(n); !why.empty()) \
            GTEST_SKIP() << why;                                                       \
    } while (0)

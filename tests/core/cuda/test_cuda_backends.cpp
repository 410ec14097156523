// The backends report, `tandem devices` lines and the "no CUDA device" errors (no GPU needed),
// and the CUDA backend's kernel registrations.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/backends.h"
#include "base/error.h"
#include "device/cuda/cuda_backend.h"
#include "kernels/attention_kernel.h"
#include "kernels/kernels.h"
#include "kernels/registry.h"
#include "layers/cross_entropy.h"
#include "support/cuda_test.h"

namespace tandem::test {
namespace {

std::string config_error(const BackendStatus& s, int wanted) {
    try {
        cuda_devices_to_make(s, wanted);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

BackendStatus two_gpus() {
    BackendStatus s;
    s.cuda_compiled = true;
    s.cuda_count = 2;
    s.cuda_devices = {"cuda:0 NVIDIA H100, 79.1 GiB, sm_90", "cuda:1 NVIDIA H100, 79.1 GiB, sm_90"};
    s.cuda_versions = "CUDA runtime 13.0, driver 13.0, cuDNN 9.19.0, NCCL 2.28.9";
    return s;
}

TEST(CudaBackends, LineSaysWhatIsCompiledAndPresent) {
    BackendStatus off;
    EXPECT_EQ(backends_line(off),
              "backends: cpu (oneDNN); cuda: not compiled in (TANDEM_CUDA=OFF)");
    BackendStatus none;
    none.cuda_compiled = true;
    none.cuda_reason = "cudaErrorNoDevice: no CUDA-capable device is detected";
    EXPECT_EQ(backends_line(none),
              "backends: cpu (oneDNN); cuda: compiled, no GPU here (cudaErrorNoDevice: no "
              "CUDA-capable device is detected)");
    EXPECT_EQ(backends_line(two_gpus()), "backends: cpu (oneDNN); cuda: compiled, 2 devices");
}

TEST(CudaBackends, ReportListsEveryDevice) {
    const auto lines = device_report(two_gpus());
    ASSERT_EQ(lines.size(), 5u);
    EXPECT_EQ(lines[0], backends_line(two_gpus()));
    EXPECT_EQ(lines[1].rfind("cpu: the host, ", 0), 0u);
    EXPECT_EQ(lines[2], "cuda: CUDA runtime 13.0, driver 13.0, cuDNN 9.19.0, NCCL 2.28.9");
    EXPECT_EQ(lines[4], "cuda:1 NVIDIA H100, 79.1 GiB, sm_90");
}

TEST(CudaBackends, NoDeviceErrorsSayWhy) {
    BackendStatus off;
    EXPECT_EQ(config_error(off, 1),
              "no CUDA device: cuda is not compiled into this build (TANDEM_CUDA=OFF; compiled "
              "backends: cpu)");
    BackendStatus none;
    none.cuda_compiled = true;
    none.cuda_reason = "cudaErrorInsufficientDriver: CUDA driver version is insufficient";
    EXPECT_EQ(config_error(none, -1),
              "no CUDA device: the backend is compiled in, but no GPU or driver was found "
              "(cudaErrorInsufficientDriver: CUDA driver version is insufficient)");
    EXPECT_NE(config_error(two_gpus(), 3).find("no CUDA device: 3 asked, 2 present (cuda:0 "),
              std::string::npos);
    EXPECT_EQ(cuda_devices_to_make(two_gpus(), -1), 2);
    EXPECT_EQ(cuda_devices_to_make(two_gpus(), 1), 1);
}

// This machine, whatever it has: a GPU count, or a reason naming the runtime's error.
TEST(CudaBackends, ProbeOfThisMachine) {
    const BackendStatus s = backend_status();
    EXPECT_TRUE(s.cuda_compiled);
    EXPECT_EQ(s.cuda_versions.rfind("CUDA runtime ", 0), 0u) << s.cuda_versions;
    if (s.cuda_count == 0) {
        EXPECT_FALSE(s.cuda_reason.empty());
        EXPECT_EQ(int(s.cuda_devices.size()), 0);
        EXPECT_NE(cuda_skip_reason(1).find("skipped: no CUDA device: "), std::string::npos);
        // Making a device says the same thing through the runtime's error, naming the call.
        try {
            make_cuda_device(0, {});
            ADD_FAILURE() << "a CUDA device was made without a GPU";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("cudaGetDeviceCount(&count) failed: "),
                      std::string::npos)
                << e.what();
        }
    } else {
        EXPECT_EQ(int(s.cuda_devices.size()), s.cuda_count);
        EXPECT_EQ(cuda_skip_reason(1), "");
    }
}

template <class K>
bool registered_for_cuda() {
    const auto names = KernelRegistry::instance().implementations<K>();
    return std::any_of(names.begin(), names.end(),
                       [](const std::string& n) { return n.rfind("cuda/", 0) == 0; });
}

// Every kernel kind the CPU backend offers has a CUDA implementation.
TEST(CudaBackends, EveryKernelKindIsRegistered) {
    EXPECT_TRUE(registered_for_cuda<TensorOpsKernel>());
    EXPECT_TRUE(registered_for_cuda<RnnCellKernel>());
    EXPECT_TRUE(registered_for_cuda<SoftmaxKernel>());
    EXPECT_TRUE(registered_for_cuda<EmbeddingKernel>());
    EXPECT_TRUE(registered_for_cuda<LayerNormKernel>());
    EXPECT_TRUE(registered_for_cuda<ActivationKernel>());
    EXPECT_TRUE(registered_for_cuda<DropoutKernel>());
    EXPECT_TRUE(registered_for_cuda<SoftmaxCrossEntropyKernel>());
    EXPECT_TRUE(registered_for_cuda<BatchNormKernel>());
    EXPECT_TRUE(registered_for_cuda<Pool2dKernel>());
    EXPECT_TRUE(registered_for_cuda<LrnKernel>());
    EXPECT_TRUE(registered_for_cuda<Conv2dKernel>());
    EXPECT_TRUE(registered_for_cuda<LinearKernel>());
    EXPECT_TRUE(registered_for_cuda<AttentionKernel>());
}

// The optional whole-sequence recurrent kernel: CUDA's alone (cuDNN's RNN API).
TEST(CudaBackends, TheSequenceKernelIsCudnnsAlone) {
    EXPECT_EQ(KernelRegistry::instance().implementations<RnnSequenceKernel>(),
              std::vector<std::string>{"cuda/cudnn"});
}

}  // namespace
}  // namespace tandem::test

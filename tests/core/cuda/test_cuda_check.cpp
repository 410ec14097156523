// Error translation (runs without a GPU): every library's status becomes a BackendError that
// names the call as written and the library's name for the status.
#include <gtest/gtest.h>

#include "base/error.h"
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"

namespace tandem::test {
namespace {

using namespace tandem::cuda;

template <class F>
std::string message_of(F&& f) {
    try {
        f();
    } catch (const BackendError& e) {
        return e.what();
    }
    return "(no BackendError)";
}

TEST(CudaCheck, CudaStatusNamesCallAndError) {
    const std::string text = cuda_error_text(cudaErrorMemoryAllocation, "cudaMalloc(&ptr, bytes)");
    EXPECT_EQ(text, "cudaMalloc(&ptr, bytes) failed: cudaErrorMemoryAllocation (out of memory)");
    EXPECT_NE(message_of([] {
                  check_cuda(cudaErrorInvalidValue, "cudaMemcpyAsync(...)");
              }).find("cudaMemcpyAsync(...) failed: cudaErrorInvalidValue"),
              std::string::npos);
    EXPECT_NO_THROW(check_cuda(cudaSuccess, "cudaFree(p)"));
}

cudnnStatus_t fake_cudnn_call() {
    return CUDNN_STATUS_BAD_PARAM;
}
cublasStatus_t fake_cublas_call() {
    return CUBLAS_STATUS_INVALID_VALUE;
}
ncclResult_t fake_nccl_call() {
    return ncclInvalidArgument;
}
cudaError_t fake_cuda_call() {
    return cudaErrorInvalidDevice;
}

TEST(CudaCheck, MacrosQuoteTheCall) {
    EXPECT_NE(message_of([] {
                  TANDEM_CUDA_CALL(fake_cuda_call());
              }).find("fake_cuda_call() failed: cudaErrorInvalidDevice (invalid device ordinal)"),
              std::string::npos);
    EXPECT_NE(message_of([] {
                  TANDEM_CUDNN_CALL(fake_cudnn_call());
              }).find("fake_cudnn_call() failed: CUDNN_STATUS_BAD_PARAM"),
              std::string::npos);
    EXPECT_NE(message_of([] {
                  TANDEM_CUBLAS_CALL(fake_cublas_call());
              }).find("fake_cublas_call() failed: CUBLAS_STATUS_INVALID_VALUE"),
              std::string::npos);
    const std::string nccl = message_of([] { TANDEM_NCCL_CALL(fake_nccl_call()); });
    EXPECT_NE(nccl.find("fake_nccl_call() failed: ncclInvalidArgument ("), std::string::npos)
        << nccl;
}

TEST(CudaCheck, EveryNcclStatusHasAName) {
    for (int s = ncclSuccess; s < ncclNumResults; ++s)
        EXPECT_EQ(nccl_status_name(ncclResult_t(s)).find("nccl"), 0u) << s;
    EXPECT_EQ(nccl_status_name(ncclRemoteError), "ncclRemoteError");
}

// Real calls that fail the same way with or without a GPU.
TEST(CudaCheck, RealFailuresNameTheCall) {
    // A negative size is refused by cuDNN's descriptor code on the host.
    const std::string cudnn = message_of([] { TensorDesc d(Dims4{-1, 1, 1, 1, 1, 1, 1, 1}); });
    EXPECT_NE(cudnn.find("cudnnSetTensor4dDescriptorEx("), std::string::npos) << cudnn;
    EXPECT_NE(cudnn.find("failed: CUDNN_STATUS_"), std::string::npos) << cudnn;

    // Without a GPU the runtime says why (no driver, no device); with one, the count is > 0.
    int count = 0;
    const std::string cuda = message_of([&] { TANDEM_CUDA_CALL(cudaGetDeviceCount(&count)); });
    if (cuda != "(no BackendError)") {
        EXPECT_EQ(cuda.find("cudaGetDeviceCount(&count) failed: cudaError"), 0u) << cuda;
    } else {
        EXPECT_GT(count, 0);
    }
}

TEST(CudaCheck, LaunchErrorsNameTheKernel) {
    // No launch happened: the slot is clear (or holds the no-driver error, which is what a
    // launch would report on this machine, named after the kernel).
    const std::string text = message_of([] { check_launch("sgd_update"); });
    if (text != "(no BackendError)") {
        EXPECT_NE(text.find("launch of kernel sgd_update failed: cudaError"), std::string::npos)
            << text;
    }
}

}  // namespace
}  // namespace tandem::test

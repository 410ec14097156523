#include "device/cuda/check.h"

#include "base/error.h"

namespace tandem::cuda {
namespace {

std::string text(std::string_view call, std::string_view name, std::string_view detail) {
    std::string message(call);
    message += " failed: ";
    message += name;
    if (!detail.empty() && detail != name) {
        message += " (";
        message += detail;
        message += ")";
    }
    return message;
}

}  // namespace

std::string cuda_error_text(cudaError_t status, std::string_view call) {
    return text(call, cudaGetErrorName(status), cudaGetErrorString(status));
}

std::string cudnn_error_text(cudnnStatus_t status, std::string_view call) {
    // cudnnGetErrorString returns the enum's name ("CUDNN_STATUS_BAD_PARAM"); the last error
    // message, when cuDNN 9 kept one, says which argument was wrong.
    std::string detail;
    char buffer[512] = {};
    cudnnGetLastErrorString(buffer, sizeof(buffer));
    detail = buffer;
    return text(call, cudnnGetErrorString(status), detail);
}

std::string cublas_error_text(cublasStatus_t status, std::string_view call) {
    return text(call, cublasGetStatusName(status), cublasGetStatusString(status));
}

std::string_view nccl_status_name(ncclResult_t status) {
    switch (status) {
        case ncclSuccess: return "ncclSuccess";
        case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
        case ncclSystemError: return "ncclSystemError";
        case ncclInternalError: return "ncclInternalError";
        case ncclInvalidArgument: return "ncclInvalidArgument";
        case ncclInvalidUsage: return "ncclInvalidUsage";
        case ncclRemoteError: return "ncclRemoteError";
        case ncclInProgress: return "ncclInProgress";
        default: return "ncclResult (unknown)";
    }
}

std::string nccl_error_text(ncclResult_t status, std::string_view call) {
    return text(call, nccl_status_name(status), ncclGetErrorString(status));
}

void check_cuda(cudaError_t status, std::string_view call) {
    if (status == cudaSuccess) return;
    // Non-sticky errors stay in the per-thread slot and would be reported again by the next
    // cudaGetLastError; a sticky one (a kernel fault) stays whatever we do.
    cudaGetLastError();
    throw BackendError(cuda_error_text(status, call));
}

void check_launch(std::string_view kernel) {
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess)
        throw BackendError(cuda_error_text(status, "launch of kernel " + std::string(kernel)));
}

void check_cudnn(cudnnStatus_t status, std::string_view call) {
    if (status != CUDNN_STATUS_SUCCESS) throw BackendError(cudnn_error_text(status, call));
}

void check_cublas(cublasStatus_t status, std::string_view call) {
    if (status != CUBLAS_STATUS_SUCCESS) throw BackendError(cublas_error_text(status, call));
}

void check_nccl(ncclResult_t status, std::string_view call) {
    if (status != ncclSuccess) throw BackendError(nccl_error_text(status, call));
}

}  // namespace tandem::cuda

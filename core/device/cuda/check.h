// Status checks for the CUDA runtime, cuDNN, cuBLAS and NCCL: every call the backend makes goes
// through one of the four macros, and a failure becomes a BackendError that names the call as
// written, the library's name for the status and its text, e.g.
//   cudaMalloc(&ptr, bytes) failed: cudaErrorMemoryAllocation (out of memory)
// Code that cannot be debugged by trial has to say which call failed and why.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>
#include <string_view>

namespace tandem::cuda {

// The message for a failed call; exposed so tests can feed known status codes.
std::string cuda_error_text(cudaError_t status, std::string_view call);
std::string cudnn_error_text(cudnnStatus_t status, std::string_view call);
std::string cublas_error_text(cublasStatus_t status, std::string_view call);
std::string nccl_error_text(ncclResult_t status, std::string_view call);

// Each throws BackendError with the text above unless the status is success. The CUDA one
// also clears the runtime's sticky last-error slot, so the next check sees only its own call.
void check_cuda(cudaError_t status, std::string_view call);
void check_cudnn(cudnnStatus_t status, std::string_view call);
void check_cublas(cublasStatus_t status, std::string_view call);
void check_nccl(ncclResult_t status, std::string_view call);

// After a kernel launch: a launch error (bad configuration, no kernel image for this GPU)
// becomes a BackendError naming the kernel.
void check_launch(std::string_view kernel);

// NCCL has no status-name function; "ncclInvalidArgument" for the enum value.
std::string_view nccl_status_name(ncclResult_t status);

}  // namespace tandem::cuda

#define TANDEM_CUDA_CALL(call) ::tandem::cuda::check_cuda((call), #call)
#define TANDEM_CUDNN_CALL(call) ::tandem::cuda::check_cudnn((call), #call)
#define TANDEM_CUBLAS_CALL(call) ::tandem::cuda::check_cublas((call), #call)
#define TANDEM_NCCL_CALL(call) ::tandem::cuda::check_nccl((call), #call)

// CudaDevice: one GPU as a Device.
//
// Streams. Kernels run on the compute stream, in the order they are called; copies between
// devices on the copy stream; NCCL collectives on the communication stream. Work on the copy
// and communication streams is ordered against the compute streams by events, and every call
// that uses them waits for its own work before returning, so a tensor's memory is only ever
// in flight on its device's compute stream. That is what makes the caching allocator safe
// without per-stream bookkeeping: a block freed and reused is used again in compute-stream
// order. Copies to and from the host synchronise (the host buffer may go away on return); from
// and to pinned host memory they are one DMA copy, from pageable memory they go through a
// pinned staging buffer.
//
// Threads. Any thread may call in: each entry point makes the GPU current first (activate()).
// cuDNN and cuBLAS handles must not be used by two threads at once; the device's worker is the
// one thread that runs its kernels in training, and tests call from one thread.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "device/cuda/cuda_allocator.h"
#include "device/cuda/cuda_backend.h"
#include "device/cuda/pinned_host.h"

namespace tandem {

class CudaDevice final : public Device {
public:
    CudaDevice(int index, const CudaDeviceOptions& options);
    ~CudaDevice() override;

    bool host_accessible() const override { return false; }
    void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
    void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
    bool copy_from_device(void* dst, Device& src_device, const void* src,
                          std::size_t bytes) override;
    void copy_within(void* dst, const void* src, std::size_t bytes) override;
    void synchronize() override;
    // This GPU's page-locked host memory: copy_from_host and copy_to_host move data in and
    // out of it in one DMA copy, without the staging buffer.
    Device* pinned_host() override { return pinned_.get(); }

    // cudaSetDevice(index()) on the calling thread.
    void activate() const;

    cudaStream_t compute_stream() const { return compute_; }
    cudaStream_t copy_stream() const { return copy_; }
    cudaStream_t comm_stream() const { return comm_; }
    cudnnHandle_t cudnn() const { return cudnn_; }
    cublasHandle_t cublas() const { return cublas_; }

    // At least `bytes` of scratch memory for cuDNN calls on the compute stream, shared by the
    // device's kernels (they run one after another) and counted against the cap.
    void* workspace(std::size_t bytes);
    std::size_t workspace_budget() const { return workspace_budget_; }
    bool benchmark() const { return benchmark_; }
    bool tf32() const { return tf32_; }

    // Whether this GPU reads `other`'s memory directly (peer access enabled on first use).
    bool peer_access(const CudaDevice& other);

    // The GPU's name and compute capability, read once when the device is made.
    const std::string& gpu_name() const { return gpu_name_; }
    int capability_major() const { return capability_major_; }
    int capability_minor() const { return capability_minor_; }
    // gpu_precision_unavailable for this GPU.
    std::string precision_unavailable(Precision precision) const override;

private:
    void copy_staged(void* dst, CudaDevice& from, const void* src, std::size_t bytes);

    cudaStream_t compute_ = nullptr, copy_ = nullptr, comm_ = nullptr;
    cudnnHandle_t cudnn_ = nullptr;
    cublasHandle_t cublas_ = nullptr;
    std::size_t workspace_budget_ = 0;
    bool benchmark_ = false;
    bool tf32_ = false;
    std::string gpu_name_;
    int capability_major_ = 0, capability_minor_ = 0;

    std::mutex workspace_mutex_;
    void* workspace_ = nullptr;
    std::size_t workspace_bytes_ = 0;

    std::mutex staging_mutex_;  // one host<->device copy through the staging buffer at a time
    PinnedBuffer staging_;
    // Shared: tensors in it keep it alive (a loader's batches may outlive this device).
    std::shared_ptr<PinnedHostDevice> pinned_;

    std::mutex peer_mutex_;
    std::map<int, bool> peers_;
};

// Why GPU `device` ("cuda:0"), a `gpu` of compute capability major.minor, cannot compute
// convolutions and products in `precision` (Device::precision_unavailable), empty when it can:
// fp32 always; fp16 and bf16 on the tensor cores that take them (7.0 or later for half, 8.0
// for bfloat16); tf32 never, as it is the device's `tf32` option rather than a precision of the
// layers. A function of these alone, so the CPU-side tests read what GPUs absent here say.
std::string gpu_precision_unavailable(Precision precision, std::string_view device,
                                      std::string_view gpu, int major, int minor);

// The device's CudaDevice, or a BackendError naming the device when it is not a CUDA device.
CudaDevice& as_cuda(Device& device);

// Makes GPU `index` current for a scope and restores the previous one (cutorch.withDevice).
class DeviceGuard {
public:
    explicit DeviceGuard(int index);
    ~DeviceGuard();
    DeviceGuard(const DeviceGuard&) = delete;
    DeviceGuard& operator=(const DeviceGuard&) = delete;

private:
    int previous_ = -1;
};

// Makes `waiter` wait for the work enqueued on `producer` (a stream of GPU `producer_index`)
// so far, through an event, without blocking the host.
void stream_wait(cudaStream_t waiter, cudaStream_t producer, int producer_index);

}  // namespace tandem

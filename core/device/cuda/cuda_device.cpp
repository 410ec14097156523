#include "device/cuda/cuda_device.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "device/cpu/cpu_device.h"
#include "device/cuda/check.h"
#include "device/cuda/plan.h"
#include "device/workspace_budget.h"

namespace tandem {
namespace {

// Host <-> device copies from pageable memory go through a pinned buffer of this size, chunk
// by chunk.
constexpr std::size_t kStagingBytes = std::size_t(8) << 20;

// The pinned host memory of one GPU: enough for a loader's batches in flight (ImageNet-sized
// batches of 256 are 154 MB each); a sixteenth of the machine's memory at most, as page-locked
// memory is taken from every other process.
std::size_t pinned_host_cap() {
    return std::min(std::size_t(2) << 30, host_physical_memory() / 16);
}

std::size_t default_cap(int index) {
    DeviceGuard guard(index);
    std::size_t free = 0, total = 0;
    TANDEM_CUDA_CALL(cudaMemGetInfo(&free, &total));
    // 5% stays for cuDNN's and cuBLAS's own allocations and the driver.
    return free / 20 * 19;
}

}  // namespace

DeviceGuard::DeviceGuard(int index) {
    TANDEM_CUDA_CALL(cudaGetDevice(&previous_));
    if (previous_ != index) TANDEM_CUDA_CALL(cudaSetDevice(index));
}

DeviceGuard::~DeviceGuard() {
    // A destructor cannot throw; failing to restore leaves the other device current, which
    // every entry point of this backend sets again anyway.
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current != previous_) cudaSetDevice(previous_);
    cudaGetLastError();
}

void stream_wait(cudaStream_t waiter, cudaStream_t producer, int producer_index) {
    DeviceGuard guard(producer_index);  // an event belongs to the device current at creation
    cudaEvent_t event = nullptr;
    TANDEM_CUDA_CALL(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    const cudaError_t recorded = cudaEventRecord(event, producer);
    const cudaError_t waited =
        recorded == cudaSuccess ? cudaStreamWaitEvent(waiter, event, 0) : cudaSuccess;
    // Destroying an event a stream still waits on is allowed: its resources go once it fires.
    const cudaError_t destroyed = cudaEventDestroy(event);
    TANDEM_CUDA_CALL(recorded);
    TANDEM_CUDA_CALL(waited);
    TANDEM_CUDA_CALL(destroyed);
}

CudaDevice::CudaDevice(int index, const CudaDeviceOptions& options)
    : Device(DeviceKind::cuda, index, 1), benchmark_(options.benchmark), tf32_(options.tf32) {
    int count = 0;
    TANDEM_CUDA_CALL(cudaGetDeviceCount(&count));
    TANDEM_CHECK_AS(ConfigError, index >= 0 && index < count)
        << "no CUDA device: cuda:" << index << " asked, " << count << " present";
    DeviceGuard guard(index);
    cudaDeviceProp properties{};
    TANDEM_CUDA_CALL(cudaGetDeviceProperties(&properties, index));
    gpu_name_ = properties.name;
    capability_major_ = properties.major;
    capability_minor_ = properties.minor;
    const std::size_t cap = options.memory > 0 ? options.memory : default_cap(index);
    allocator_ = std::make_unique<CudaAllocator>(name(), cap, index);
    workspace_budget_ = options.workspace > 0 ? options.workspace : default_workspace_budget(cap);
    // Non-blocking: the legacy default stream (which other libraries may use) never
    // serialises with ours.
    TANDEM_CUDA_CALL(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
    TANDEM_CUDA_CALL(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    TANDEM_CUDA_CALL(cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking));
    TANDEM_CUDNN_CALL(cudnnCreate(&cudnn_));
    TANDEM_CUDNN_CALL(cudnnSetStream(cudnn_, compute_));
    TANDEM_CUBLAS_CALL(cublasCreate(&cublas_));
    TANDEM_CUBLAS_CALL(cublasSetStream(cublas_, compute_));
    // Plain FP32 GEMMs (no TF32 tensor cores), so results match the CPU backend to float
    // rounding, which the parity tests rely on; TF32 tensor cores only when asked for.
    TANDEM_CUBLAS_CALL(cublasSetMathMode(
        cublas_, options.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    // The worker's thread starts with this GPU current; a failure here shows up again, as an
    // error naming the call, at the first activate() of the first task.
    worker_ = std::make_unique<Worker>(name(), [index] {
        if (cudaSetDevice(index) != cudaSuccess) cudaGetLastError();
    });
    pinned_ = std::make_shared<PinnedHostDevice>(*this, pinned_host_cap());
}

CudaDevice::~CudaDevice() {
    worker_.reset();  // join the thread before the streams and handles it uses go away
    attachments_.clear();
    // Nothing here may throw; failures leave the driver to reclaim at process exit.
    if (cudaSetDevice(index()) == cudaSuccess) {
        cudaDeviceSynchronize();
        if (workspace_) allocator_->deallocate(workspace_, workspace_bytes_);
        allocator_->release_cache();
        if (cublas_) cublasDestroy(cublas_);
        if (cudnn_) cudnnDestroy(cudnn_);
        for (cudaStream_t s : {compute_, copy_, comm_})
            if (s) cudaStreamDestroy(s);
    }
    cudaGetLastError();
}

void CudaDevice::activate() const {
    TANDEM_CUDA_CALL(cudaSetDevice(index()));
}

void CudaDevice::copy_within(void* dst, const void* src, std::size_t bytes) {
    if (bytes == 0) return;
    activate();
    // On the compute stream, so it follows the kernels that wrote the source and precedes
    // those queued after it; callable from any thread (the reduce lanes'), which the runtime
    // allows.
    TANDEM_CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, compute_));
}

void CudaDevice::synchronize() {
    activate();
    TANDEM_CUDA_CALL(cudaStreamSynchronize(compute_));
}

void CudaDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) {
    if (bytes == 0) return;
    activate();
    if (is_pinned_host_memory(src)) {  // one DMA copy, in compute-stream order
        TANDEM_CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, compute_));
        TANDEM_CUDA_CALL(cudaStreamSynchronize(compute_));
        return;
    }
    std::lock_guard lock(staging_mutex_);
    char* pinned = static_cast<char*>(staging_.reserve(std::min(bytes, kStagingBytes)));
    for (std::size_t done = 0; done < bytes;) {
        const std::size_t chunk = std::min(bytes - done, kStagingBytes);
        std::memcpy(pinned, static_cast<const char*>(src) + done, chunk);
        TANDEM_CUDA_CALL(cudaMemcpyAsync(static_cast<char*>(dst) + done, pinned, chunk,
                                         cudaMemcpyHostToDevice, compute_));
        // The staging buffer is refilled next: wait for this chunk to leave it.
        TANDEM_CUDA_CALL(cudaStreamSynchronize(compute_));
        done += chunk;
    }
}

void CudaDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) {
    if (bytes == 0) return;
    activate();
    if (is_pinned_host_memory(dst)) {  // after every kernel that wrote the source
        TANDEM_CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, compute_));
        TANDEM_CUDA_CALL(cudaStreamSynchronize(compute_));
        return;
    }
    std::lock_guard lock(staging_mutex_);
    char* pinned = static_cast<char*>(staging_.reserve(std::min(bytes, kStagingBytes)));
    for (std::size_t done = 0; done < bytes;) {
        const std::size_t chunk = std::min(bytes - done, kStagingBytes);
        // On the compute stream: after every kernel that wrote the source.
        TANDEM_CUDA_CALL(cudaMemcpyAsync(pinned, static_cast<const char*>(src) + done, chunk,
                                         cudaMemcpyDeviceToHost, compute_));
        TANDEM_CUDA_CALL(cudaStreamSynchronize(compute_));
        std::memcpy(static_cast<char*>(dst) + done, pinned, chunk);
        done += chunk;
    }
}

bool CudaDevice::peer_access(const CudaDevice& other) {
    if (other.index() == index()) return true;
    std::lock_guard lock(peer_mutex_);
    if (auto it = peers_.find(other.index()); it != peers_.end()) return it->second;
    DeviceGuard guard(index());
    int can = 0;
    TANDEM_CUDA_CALL(cudaDeviceCanAccessPeer(&can, index(), other.index()));
    if (can) {
        const cudaError_t status = cudaDeviceEnablePeerAccess(other.index(), 0);
        // Another user of this process may have enabled it already: that is success. Past
        // the hardware's peer limit (8 per GPU) copies are staged through the host instead.
        if (status == cudaErrorPeerAccessAlreadyEnabled) {
            cudaGetLastError();
        } else if (status == cudaErrorTooManyPeers) {
            cudaGetLastError();
            can = 0;
        } else {
            TANDEM_CUDA_CALL(status);
        }
    }
    peers_[other.index()] = can != 0;
    return can != 0;
}

bool CudaDevice::copy_from_device(void* dst, Device& src_device, const void* src,
                                  std::size_t bytes) {
    if (src_device.kind() != DeviceKind::cuda) return false;
    if (bytes == 0) return true;
    auto& from = as_cuda(src_device);
    activate();
    // The copy stream starts after the producer's kernels (the data is ready) and after this
    // device's queued kernels (the destination block may be one they still use, recycled by
    // the caching allocator).
    stream_wait(copy_, from.compute_stream(), from.index());
    stream_wait(copy_, compute_, index());
    if (peer_access(from)) {
        TANDEM_CUDA_CALL(cudaMemcpyPeerAsync(dst, index(), src, from.index(), bytes, copy_));
    } else {
        copy_staged(dst, from, src, bytes);
    }
    // Later kernels on this device see the data; the host waits too, because the caller may
    // drop the source tensor (and the sender recycle its block) as soon as this returns.
    stream_wait(compute_, copy_, index());
    TANDEM_CUDA_CALL(cudaStreamSynchronize(copy_));
    return true;
}

// No peer path: device -> pinned host on the sender's copy stream, then pinned host -> device
// on ours, chunk by chunk through our staging buffer.
void CudaDevice::copy_staged(void* dst, CudaDevice& from, const void* src, std::size_t bytes) {
    std::lock_guard lock(staging_mutex_);
    char* pinned = static_cast<char*>(staging_.reserve(std::min(bytes, kStagingBytes)));
    stream_wait(from.copy_stream(), from.compute_stream(), from.index());
    for (std::size_t done = 0; done < bytes;) {
        const std::size_t chunk = std::min(bytes - done, kStagingBytes);
        {
            DeviceGuard guard(from.index());
            TANDEM_CUDA_CALL(cudaMemcpyAsync(pinned, static_cast<const char*>(src) + done, chunk,
                                             cudaMemcpyDeviceToHost, from.copy_stream()));
            TANDEM_CUDA_CALL(cudaStreamSynchronize(from.copy_stream()));
        }
        TANDEM_CUDA_CALL(cudaMemcpyAsync(static_cast<char*>(dst) + done, pinned, chunk,
                                         cudaMemcpyHostToDevice, copy_));
        TANDEM_CUDA_CALL(cudaStreamSynchronize(copy_));
        done += chunk;
    }
}

void* CudaDevice::workspace(std::size_t bytes) {
    std::lock_guard lock(workspace_mutex_);
    if (bytes <= workspace_bytes_) return workspace_;
    // The old block goes back to the cache; queued kernels that use it run before anything
    // that reuses it (both on the compute stream).
    if (workspace_) allocator_->deallocate(workspace_, workspace_bytes_);
    workspace_ = nullptr;
    workspace_bytes_ = 0;
    workspace_ = allocator_->allocate(bytes);
    workspace_bytes_ = bytes;
    return workspace_;
}

std::string CudaDevice::precision_unavailable(Precision precision) const {
    return gpu_precision_unavailable(precision, name(), gpu_name_, capability_major_,
                                     capability_minor_);
}

std::string gpu_precision_unavailable(Precision precision, std::string_view device,
                                      std::string_view gpu, int major, int minor) {
    const auto without = [&](std::string_view tensor_cores, int needed_major,
                             std::string_view examples) {
        return std::string(device) + " (" + std::string(gpu) + ", compute capability " +
               std::to_string(major) + "." + std::to_string(minor) + ") has no " +
               std::string(tensor_cores) + " tensor cores (" + std::to_string(needed_major) +
               ".0 or later: " + std::string(examples) + ")";
    };
    switch (precision) {
        case Precision::fp32: return {};
        case Precision::tf32:
            return "TF32 tensor cores are the cuda device's tf32 option (T.devices('cuda', n, "
                   "{tf32 = true})), not a precision of the layers";
        case Precision::fp16:
            return major >= 7 ? std::string() : without("float16", 7, "V100, T4, A100, H100");
        case Precision::bf16:
            return major >= 8 ? std::string() : without("bfloat16", 8, "A100, H100");
    }
    return {};
}

CudaDevice& as_cuda(Device& device) {
    auto* cuda = dynamic_cast<CudaDevice*>(&device);
    TANDEM_CHECK_AS(BackendError, cuda != nullptr)
        << device.name() << " is not a CUDA device, but a CUDA kernel was asked to run on it";
    return *cuda;
}

std::unique_ptr<Device> make_cuda_device(int index, const CudaDeviceOptions& options) {
    return std::make_unique<CudaDevice>(index, options);
}

}  // namespace tandem

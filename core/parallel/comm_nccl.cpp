#include "parallel/comm_nccl.h"

#include <nccl.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "base/error.h"
#include "device/cuda/check.h"
#include "device/cuda/cuda_device.h"

namespace tandem {
namespace {

static_assert(sizeof(ncclUniqueId) == std::tuple_size_v<NcclId>, "NcclId must hold an id");

class NcclCommunicator final : public Communicator {
public:
    // In process: one rank per device, all local.
    explicit NcclCommunicator(const std::vector<Device*>& devices) : size_(int(devices.size())) {
        TANDEM_CHECK_AS(ConfigError, !devices.empty()) << "an NCCL communicator needs a device";
        for (int r = 0; r < size_; ++r) ranks_.push_back(make_rank(*devices[std::size_t(r)], r));
        init_all();
    }

    // Across processes: this process's ranks first_rank, first_rank + 1, ...
    NcclCommunicator(const NcclId& id, int ranks, int first_rank,
                     const std::vector<Device*>& devices,
                     std::function<void(const std::string&)> on_abort)
        : size_(ranks), multi_process_(true), id_(id), on_abort_(std::move(on_abort)) {
        const int last = first_rank + int(devices.size()) - 1;
        TANDEM_CHECK_AS(ConfigError, !devices.empty() && first_rank >= 0 && last < ranks)
            << "NCCL ranks " << first_rank << " to " << last << " of " << ranks << " do not exist";
        for (std::size_t i = 0; i < devices.size(); ++i)
            ranks_.push_back(make_rank(*devices[i], first_rank + int(i)));
        init_joined();
    }

    int size() const override { return size_; }

    void all_reduce_sum(int rank, float* data, std::size_t count, ReduceAlgorithm) override {
        run(rank, "ncclAllReduce", 2 * (size_ - 1) * count * sizeof(float) / std::size_t(size_),
            [&](ncclComm_t comm, cudaStream_t s) {
                return ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm, s);
            });
    }

    void broadcast(int rank, float* data, std::size_t count, int root) override {
        check_root(root);
        run(rank, "ncclBroadcast", count * sizeof(float), [&](ncclComm_t comm, cudaStream_t s) {
            return ncclBroadcast(data, data, count, ncclFloat, root, comm, s);
        });
    }

    void reduce_sum(int rank, float* data, std::size_t count, int root) override {
        check_root(root);
        run(rank, "ncclReduce", count * sizeof(float), [&](ncclComm_t comm, cudaStream_t s) {
            return ncclReduce(data, data, count, ncclFloat, ncclSum, root, comm, s);
        });
    }

    void barrier(int rank) override {
        // A one-float all-reduce: returns on a rank once every rank has joined it.
        Rank& r = local(rank);
        run(rank, "ncclAllReduce (barrier)", sizeof(float), [&](ncclComm_t comm, cudaStream_t s) {
            return ncclAllReduce(r.scratch, r.scratch, 1, ncclFloat, ncclSum, comm, s);
        });
    }

    void abort(const std::string& reason) override {
        for (auto& r : ranks_) {
            std::lock_guard lock(r->mutex);
            {
                std::lock_guard state(state_mutex_);
                if (!aborted_) reason_ = reason;
                aborted_ = true;
            }
            if (r->comm) {
                DeviceGuard guard(r->device->index());
                // Aborts the rank's queued and running collectives; its completion events then
                // fire and the waiting threads see the abort flag.
                ncclCommAbort(r->comm);
                r->comm = nullptr;
            }
        }
        if (on_abort_) on_abort_(reason);
    }

    void reset() override {
        std::lock_guard state(state_mutex_);
        if (!aborted_) return;
        TANDEM_CHECK_AS(ConfigError, !multi_process_)
            << "an aborted multi-process NCCL communicator cannot be re-created from the same "
               "unique id; make a new one with a new id";
        aborted_ = false;
        reason_.clear();
        init_all();
    }

    std::size_t bytes_sent(int rank) const override {
        for (const auto& r : ranks_)
            if (r->rank == rank) return r->bytes_sent.load();
        return 0;
    }

private:
    // Owns its comm and scratch, so a constructor that fails halfway frees what it made.
    struct Rank {
        CudaDevice* device = nullptr;
        int rank = 0;
        ncclComm_t comm = nullptr;
        float* scratch = nullptr;  // the barrier's float on the device
        std::mutex mutex;          // held while the comm is used, and by abort()
        std::atomic<std::size_t> bytes_sent{0};

        ~Rank() {
            // A destructor cannot throw (no DeviceGuard); errors leave the rest to process exit.
            if (comm && cudaSetDevice(device->index()) == cudaSuccess) ncclCommDestroy(comm);
            cudaGetLastError();
            if (scratch) device->allocator().deallocate(scratch, sizeof(float));
        }
    };

    std::unique_ptr<Rank> make_rank(Device& device, int rank) {
        auto r = std::make_unique<Rank>();
        r->device = &as_cuda(device);
        r->rank = rank;
        r->scratch = static_cast<float*>(r->device->allocator().allocate(sizeof(float)));
        return r;
    }

    void init_all() {
        std::vector<int> ordinals;
        for (const auto& r : ranks_) ordinals.push_back(r->device->index());
        std::vector<ncclComm_t> comms(ranks_.size(), nullptr);
        TANDEM_NCCL_CALL(ncclCommInitAll(comms.data(), size_, ordinals.data()));
        for (std::size_t i = 0; i < ranks_.size(); ++i) ranks_[i]->comm = comms[i];
    }

    // Joins the ranks of every process made from id_. One thread initialising several GPUs
    // must group the calls (NCCL's "Group Calls"), each after selecting its device; the group's
    // end blocks until every rank of every process has joined.
    void init_joined() {
        ncclUniqueId id;
        std::memcpy(&id, id_.data(), sizeof(id));
        TANDEM_NCCL_CALL(ncclGroupStart());
        ncclResult_t first_error = ncclSuccess;
        std::string failed;
        for (auto& r : ranks_) {
            DeviceGuard guard(r->device->index());
            const ncclResult_t status = ncclCommInitRank(&r->comm, size_, id, r->rank);
            if (status != ncclSuccess && first_error == ncclSuccess) {
                first_error = status;
                failed = "ncclCommInitRank(rank " + std::to_string(r->rank) + " of " +
                         std::to_string(size_) + ") on " + r->device->name();
            }
        }
        // Always end the group, or this thread's later NCCL calls would join it.
        const ncclResult_t end = ncclGroupEnd();
        if (first_error != ncclSuccess) cuda::check_nccl(first_error, failed);
        TANDEM_NCCL_CALL(end);
    }

    void check_root(int root) const {
        TANDEM_CHECK_AS(ConfigError, root >= 0 && root < size_)
            << "NCCL root " << root << " is not a rank of " << size_;
    }

    Rank& local(int rank) {
        for (auto& r : ranks_)
            if (r->rank == rank) return *r;
        TANDEM_THROW(ConfigError) << "NCCL rank " << rank << " is not in this process (size "
                                  << size_ << ")";
    }

    void throw_if_aborted() {
        std::lock_guard state(state_mutex_);
        if (aborted_) throw CancelledError("NCCL communicator aborted: " + reason_);
    }

    template <class Enqueue>
    void run(int rank, const char* call, std::size_t bytes, Enqueue enqueue) {
        Rank& r = local(rank);
        CudaDevice& d = *r.device;
        d.activate();
        cudaEvent_t done = nullptr;
        TANDEM_CUDA_CALL(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
        try {
            {
                std::lock_guard lock(r.mutex);
                throw_if_aborted();
                // After the kernels that produced the data, on the communication stream.
                stream_wait(d.comm_stream(), d.compute_stream(), d.index());
                cuda::check_nccl(
                    enqueue(r.comm, d.comm_stream()),
                    std::string(call) + " on " + d.name() + " (rank " + std::to_string(rank) + ")");
                TANDEM_CUDA_CALL(cudaEventRecord(done, d.comm_stream()));
                // Kernels queued after this call read the reduced data.
                stream_wait(d.compute_stream(), d.comm_stream(), d.index());
            }
            wait(r, done, call);
        } catch (...) {
            cudaEventDestroy(done);
            throw;
        }
        TANDEM_CUDA_CALL(cudaEventDestroy(done));
        r.bytes_sent += bytes;
    }

    // Polls the completion event, watching for abort() and NCCL's asynchronous errors; yields
    // the core between polls (no sleep: the collective may take microseconds).
    void wait(Rank& r, cudaEvent_t done, const char* call) {
        for (;;) {
            const cudaError_t status = cudaEventQuery(done);
            if (status == cudaSuccess) {
                throw_if_aborted();  // an aborted collective also completes
                return;
            }
            if (status != cudaErrorNotReady) TANDEM_CUDA_CALL(status);
            cudaGetLastError();  // "not ready" is no error: keep it out of the next check
            ncclResult_t async = ncclSuccess;
            {
                std::lock_guard lock(r.mutex);
                throw_if_aborted();
                TANDEM_NCCL_CALL(ncclCommGetAsyncError(r.comm, &async));
            }
            if (async != ncclSuccess && async != ncclInProgress) {
                const std::string message = cuda::nccl_error_text(
                    async, std::string(call) + " on " + r.device->name() + " (asynchronous)");
                abort(message);
                throw BackendError(message);
            }
            std::this_thread::yield();
        }
    }

    const int size_;
    const bool multi_process_ = false;
    const NcclId id_{};
    const std::function<void(const std::string&)> on_abort_;
    std::vector<std::unique_ptr<Rank>> ranks_;
    std::mutex state_mutex_;
    bool aborted_ = false;
    std::string reason_;
};

}  // namespace

NcclId nccl_unique_id() {
    ncclUniqueId id;
    TANDEM_NCCL_CALL(ncclGetUniqueId(&id));
    NcclId bytes{};
    std::memcpy(bytes.data(), &id, sizeof(id));
    return bytes;
}

std::unique_ptr<Communicator> make_nccl_communicator(const std::vector<Device*>& devices) {
    return std::make_unique<NcclCommunicator>(devices);
}

std::unique_ptr<Communicator> make_nccl_communicator(
    const NcclId& id, int ranks, int first_rank, const std::vector<Device*>& devices,
    std::function<void(const std::string&)> on_abort) {
    return std::make_unique<NcclCommunicator>(id, ranks, first_rank, devices, std::move(on_abort));
}

}  // namespace tandem

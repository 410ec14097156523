#include "parallel/comm_staged.h"

#include "base/error.h"
#include "device/device.h"

namespace tandem {

StagedCommunicator::StagedCommunicator(std::vector<Device*> devices,
                                       std::shared_ptr<Communicator> inner, int first_rank)
    : inner_(std::move(inner)), first_rank_(first_rank) {
    TANDEM_CHECK(inner_ && !devices.empty())
        << "a staged communicator needs devices and a host communicator";
    TANDEM_CHECK(first_rank >= 0 && first_rank + int(devices.size()) <= inner_->size())
        << "staged communicator: ranks " << first_rank << ".."
        << first_rank + int(devices.size()) - 1 << " do not fit a communicator of "
        << inner_->size();
    for (Device* d : devices) ranks_.push_back(Rank{d, {}, {}});
}

StagedCommunicator::Rank& StagedCommunicator::local(int rank) {
    const int i = rank - first_rank_;
    TANDEM_CHECK(i >= 0 && i < int(ranks_.size()))
        << "staged communicator: rank " << rank << " is not one of this process's (" << first_rank_
        << ".." << first_rank_ + int(ranks_.size()) - 1 << ")";
    return ranks_[std::size_t(i)];
}

float* StagedCommunicator::host_buffer(int rank, std::size_t count) {
    Rank& r = local(rank);
    if (Device* pinned = r.device->pinned_host()) {
        if (!r.pinned.defined() || std::size_t(r.pinned.numel()) < count)
            r.pinned = Tensor::empty({std::int64_t(count)}, *pinned);
        return static_cast<float*>(r.pinned.raw());
    }
    if (r.pageable.size() < count) r.pageable.resize(count);
    return r.pageable.data();
}

void StagedCommunicator::all_reduce_sum(int rank, float* data, std::size_t count,
                                        ReduceAlgorithm algorithm) {
    Device& device = *local(rank).device;
    float* host = host_buffer(rank, count);
    device.copy_to_host(host, data, count * sizeof(float));
    inner_->all_reduce_sum(rank, host, count, algorithm);
    device.copy_from_host(data, host, count * sizeof(float));
}

void StagedCommunicator::broadcast(int rank, float* data, std::size_t count, int root) {
    Device& device = *local(rank).device;
    float* host = host_buffer(rank, count);
    if (rank == root) device.copy_to_host(host, data, count * sizeof(float));
    inner_->broadcast(rank, host, count, root);
    if (rank != root) device.copy_from_host(data, host, count * sizeof(float));
}

void StagedCommunicator::reduce_sum(int rank, float* data, std::size_t count, int root) {
    Device& device = *local(rank).device;
    float* host = host_buffer(rank, count);
    device.copy_to_host(host, data, count * sizeof(float));
    inner_->reduce_sum(rank, host, count, root);
    if (rank == root) device.copy_from_host(data, host, count * sizeof(float));
}

}  // namespace tandem

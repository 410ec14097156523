// StagedCommunicator: collectives for ranks whose data lies in memory the host cannot read
// (GPUs), carried out by a communicator over host memory.
//
// Each call copies the rank's data to a host buffer of its own (the device's pinned host
// memory where it has one, so the copy is one DMA transfer), runs the same collective on
// `inner` with that buffer, and copies the result back. The sum is then exactly `inner`'s:
// the in-process communicator's canonical pairwise tree (or, under MPI, the hierarchical
// one's), which NCCL does not offer. That is what the engine's deterministic mode takes on
// GPUs; it costs two copies over the host link per collective, and the reduction runs on the
// host.
//
// Ranks: this process's ranks are first_rank .. first_rank + devices.size() - 1 of `inner`,
// rank first_rank + i holding its data on devices[i]. Each rank calls from its own thread and
// only touches its own host buffer. abort(), reset() and bytes_sent() are `inner`'s.
#pragma once

#include <memory>
#include <vector>

#include "parallel/communicator.h"
#include "tensor/tensor.h"

namespace tandem {

class StagedCommunicator final : public Communicator {
public:
    StagedCommunicator(std::vector<Device*> devices, std::shared_ptr<Communicator> inner,
                       int first_rank = 0);

    int size() const override { return inner_->size(); }
    void all_reduce_sum(int rank, float* data, std::size_t count,
                        ReduceAlgorithm algorithm) override;
    void broadcast(int rank, float* data, std::size_t count, int root) override;
    void reduce_sum(int rank, float* data, std::size_t count, int root) override;
    void barrier(int rank) override { inner_->barrier(rank); }
    void abort(const std::string& reason) override { inner_->abort(reason); }
    void reset() override { inner_->reset(); }
    std::size_t bytes_sent(int rank) const override { return inner_->bytes_sent(rank); }

private:
    struct Rank {
        Device* device = nullptr;
        Tensor pinned;                // in the device's pinned host memory, when it has one
        std::vector<float> pageable;  // otherwise
    };
    // The rank's host buffer, at least `count` floats.
    float* host_buffer(int rank, std::size_t count);
    Rank& local(int rank);

    std::vector<Rank> ranks_;
    std::shared_ptr<Communicator> inner_;
    const int first_rank_;
};

}  // namespace tandem

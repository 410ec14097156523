// HierarchicalCommunicator: one stage's collectives over every worker group of an MPI job,
// P processes x L groups each (global rank = process * L + local group).
//
// Each collective runs in three legs: among this process's L groups in shared memory (an
// InprocCommunicator), then across processes by local rank 0 alone (the `cross`
// communicator, one rank per process: an MpiCommunicator, or in tests an in-process one shared
// by simulated processes), then back to the local groups. An all-reduce is a local tree
// reduce to local rank 0, one cross-process all-reduce per bucket, and a local broadcast;
// the engine calls it per stage as soon as that stage's backward is done, so stages (each
// with its own instance and its own MPI communicator) overlap as they do in one process.
//
// Order of the sum (tree): the local tree sums the L groups pairwise; the cross tree then
// sums the P partial sums pairwise. When L is a power of two this is exactly the canonical
// pairwise tree over all P * L groups (a tree over P values each the pairwise sum of 2^m
// values is the pairwise tree over P * 2^m values), so deterministic mode gives the bits of
// one process with P * L groups. With ring, the local leg is a tree and the cross leg is the
// library's all-reduce: the same sum in another order.
//
// Failure: abort() aborts the local communicator (waking local waiters) and the cross one (for
// MPI: ending the job, since peers blocked in a collective cannot be released otherwise). When
// the cross leg throws on local rank 0 (aborted elsewhere), the local communicator is aborted
// too, so the local ranks waiting for rank 0's result wake instead of hanging.
#pragma once

#include <memory>

#include "parallel/comm_inproc.h"

namespace tandem {

class HierarchicalCommunicator final : public Communicator {
public:
    // `cross` has one rank per process, `process` being this one's.
    HierarchicalCommunicator(int local_ranks, std::shared_ptr<Communicator> cross, int process);

    int size() const override { return local_.size() * cross_->size(); }
    // `rank` is global: process * local_ranks + local group.
    void all_reduce_sum(int rank, float* data, std::size_t count,
                        ReduceAlgorithm algorithm) override;
    void broadcast(int rank, float* data, std::size_t count, int root) override;
    void reduce_sum(int rank, float* data, std::size_t count, int root) override;
    void barrier(int rank) override;
    void abort(const std::string& reason) override;
    void reset() override;
    // The local legs' bytes, plus the cross leg's for local rank 0.
    std::size_t bytes_sent(int rank) const override;

private:
    int local_rank(int rank, const char* what) const;

    InprocCommunicator local_;
    std::shared_ptr<Communicator> cross_;
    const int process_;
};

}  // namespace tandem

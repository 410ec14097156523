// MpiCommunicator: the Communicator across the processes of an MPI job, one rank per process.
//
// Each instance owns a duplicate of MPI_COMM_WORLD, so collectives on two instances (two
// pipeline stages reducing at once, from two threads) never match each other. Within one
// instance calls come from one thread at a time (the stage's worker that speaks for its
// process; see HierarchicalCommunicator).
//
// Summation orders:
// - ring: MPI_Allreduce (the library picks its algorithm; with two ranks a + b is exact).
// - tree: a binomial reduce to rank 0 made of point-to-point messages, in the canonical
//   pairwise order of InprocCommunicator's tree (at level k = 1, 2, 4, ... rank r adds rank
//   r + k's partial sum into its own), then MPI_Bcast: every rank gets rank 0's bits, and the
//   result is the same whatever the library's collective algorithms.
// bytes_sent counts what the algorithm sends: the ring's 2(n-1)/n of the data for
// MPI_Allreduce (what a ring or Rabenseifner all-reduce moves), the tree's messages exactly,
// and a binomial broadcast's for MPI_Bcast.
//
// abort() cannot release a peer blocked in a collective, so it ends the job (mpi::abort_job,
// which reports the reason first); reset() has nothing to undo.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "parallel/communicator.h"

namespace tandem {

class MpiCommunicator final : public Communicator {
public:
    // A duplicate of the world communicator; ConfigError when MPI is not initialised.
    MpiCommunicator();
    ~MpiCommunicator() override;
    MpiCommunicator(const MpiCommunicator&) = delete;
    MpiCommunicator& operator=(const MpiCommunicator&) = delete;

    int size() const override { return size_; }
    int rank() const { return rank_; }
    void all_reduce_sum(int rank, float* data, std::size_t count,
                        ReduceAlgorithm algorithm) override;
    void broadcast(int rank, float* data, std::size_t count, int root) override;
    void reduce_sum(int rank, float* data, std::size_t count, int root) override;
    void barrier(int rank) override;
    void abort(const std::string& reason) override;
    void reset() override {}
    std::size_t bytes_sent(int rank) const override;

private:
    struct Handle;
    void check(int rank, const char* what, int root = 0) const;
    void tree_reduce_to_zero(float* data, std::size_t count);
    void count_sent(std::size_t floats) { bytes_sent_.fetch_add(floats * sizeof(float)); }

    std::unique_ptr<Handle> handle_;
    int rank_ = 0, size_ = 1;
    std::vector<float> scratch_;  // the tree's incoming partial sums
    std::atomic<std::size_t> bytes_sent_{0};
};

// How many ranks rank `rank` sends to in a binomial broadcast from rank 0 over `size` ranks.
int binomial_children(int rank, int size);

}  // namespace tandem

// InprocCommunicator: the Communicator for ranks that are threads of one process.
//
// Each rank calls from its own thread (a device's worker) with a pointer into its own
// host-accessible memory; ranks read one another's buffers directly. Phases are separated by
// a barrier built on a mutex and a condition variable, which also carries abort(): a waiting
// rank wakes and throws CancelledError with the reason, so ranks that never arrive (because
// their worker failed) leave nobody hanging.
//
// Summation orders (fixed by size() and count alone, so results are bit-identical run to run):
// - ring: the data is cut into size() chunks (chunk c belongs to rank c; boundaries on 64-byte
//   multiples). Rank c sums its chunk in the order a ring reduce-scatter would carry it,
//   (((x[c+1] + x[c+2]) + ...) + x[c+n-1]) + x[c] (indices mod n), straight from the others'
//   buffers; after a barrier every rank copies the other chunks from their owners (the
//   all-gather). Each rank's data is read 2(n-1)/n times, as a ring sends it. Every rank ends
//   with identical bits.
// - tree: binomial reduce to rank 0: at level k = 1, 2, 4, ... rank r (r % 2k == 0) adds rank
//   r+k's buffer into its own, then every rank copies rank 0's result. This is the canonical
//   pairwise order: sum[lo, hi) = sum[lo, lo + h) + sum[lo + h, hi) with h the largest power
//   of two below hi - lo (canonical_tree_split), e.g. ((x0 + x1) + (x2 + x3)) + (x4 + x5) for
//   six ranks. For a power of two it is plain recursive halving, and a tree over G ranks each
//   holding a pairwise sum of M = 2^m values equals the pairwise tree over all G*M values.
// reduce_sum uses the tree; a root other than 0 copies rank 0's sum at the end.
//
// After abort(), a rank that was past a barrier finishes its phase (reading the others'
// buffers) before it meets the next barrier and throws: keep every rank's buffer alive until
// all ranks have left the collective (the engine's gradients and buckets outlive the step).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "parallel/communicator.h"

namespace tandem {

class InprocCommunicator final : public Communicator {
public:
    explicit InprocCommunicator(int ranks);

    int size() const override { return ranks_; }
    void all_reduce_sum(int rank, float* data, std::size_t count,
                        ReduceAlgorithm algorithm) override;
    void broadcast(int rank, float* data, std::size_t count, int root) override;
    void reduce_sum(int rank, float* data, std::size_t count, int root) override;
    void barrier(int rank) override;
    void abort(const std::string& reason) override;
    void reset() override;
    std::size_t bytes_sent(int rank) const override;

private:
    // What each rank announces at the start of a collective; checked to agree across ranks.
    struct Call {
        int op = 0;
        float* data = nullptr;
        std::size_t count = 0;
        int arg = 0;  // the algorithm or the root
    };

    [[noreturn]] void fail(int rank, int op, const std::string& message);
    void check_args(int rank, int op, const float* data, std::size_t count, int root);
    void wait_all(int rank, int op, const Call* call = nullptr);
    std::string check_calls() const;  // empty when every rank made the same call

    void ring_all_reduce(int rank, std::size_t count);
    void tree_reduce(int rank, int op, std::size_t count);
    void copy_from(int rank, int source, std::size_t begin, std::size_t end);
    void count_sent(int rank, std::size_t floats);

    const int ranks_;
    std::vector<Call> calls_;  // written by its rank before a barrier, read by all after it
    std::unique_ptr<std::atomic<std::size_t>[]> bytes_sent_;

    std::mutex mutex_;
    std::condition_variable arrived_cv_;
    int arrived_ = 0;
    std::uint64_t generation_ = 0;  // barriers completed; a waiter leaves when it moves on
    bool aborted_ = false;
    bool mismatch_ = false;  // aborted because ranks made different calls
    std::string reason_;
};

// Where the canonical pairwise tree splits a range of n >= 2 values: the largest power of two
// strictly below n (1 for n = 2, 2 for 3 and 4, 4 for 5..8).
std::size_t canonical_tree_split(std::size_t n);

// The half-open element range [begin, end) of chunk `chunk` when `count` elements are cut into
// `chunks` ring chunks (what the in-process ring uses; exposed for tests).
struct ChunkRange {
    std::size_t begin = 0;
    std::size_t end = 0;
};
ChunkRange ring_chunk(std::size_t count, int chunks, int chunk);

}  // namespace tandem

// The in-process communicator: ranks are threads, buffers are shared memory (see the header
// for the summation orders). Every collective is a fixed sequence of barrier-separated
// phases; a phase only reads what the phases before it wrote, and each collective ends with a
// barrier so no rank returns (and lets its caller overwrite its buffer) while another still
// reads it. The mutex in the barrier orders every write before it with every read after it.
#include "parallel/comm_inproc.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <sstream>

#include "base/error.h"

namespace tandem {
namespace {

enum CollectiveOp { op_ring, op_tree, op_broadcast, op_reduce, op_barrier };

std::string op_text(int op) {
    switch (op) {
        case op_ring: return "all_reduce_sum (ring)";
        case op_tree: return "all_reduce_sum (tree)";
        case op_broadcast: return "broadcast";
        case op_reduce: return "reduce_sum";
        case op_barrier: return "barrier";
    }
    return "unknown collective";
}

// Ring chunk boundaries fall on multiples of 16 floats (64 bytes), so two ranks never write
// the same cache line of one buffer in the same phase.
constexpr std::size_t chunk_align = 16;

// Elements summed per pass over the sources: small enough for the accumulator to stay in L1.
constexpr std::size_t block = 1024;

}  // namespace

std::size_t canonical_tree_split(std::size_t n) {
    TANDEM_CHECK(n >= 2) << "canonical_tree_split needs at least 2 values, got " << n;
    return std::bit_floor(n - 1);
}

ChunkRange ring_chunk(std::size_t count, int chunks, int chunk) {
    auto boundary = [&](int c) -> std::size_t {
        if (c >= chunks) return count;
        const std::size_t even =
            count * static_cast<std::size_t>(c) / static_cast<std::size_t>(chunks);
        return std::min(count, (even + chunk_align - 1) / chunk_align * chunk_align);
    };
    return {boundary(chunk), boundary(chunk + 1)};
}

InprocCommunicator::InprocCommunicator(int ranks) : ranks_(ranks), calls_(ranks > 0 ? ranks : 0) {
    TANDEM_CHECK_AS(ConfigError, ranks >= 1)
        << "an in-process communicator needs at least 1 rank, got " << ranks;
    bytes_sent_ = std::make_unique<std::atomic<std::size_t>[]>(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) bytes_sent_[r].store(0, std::memory_order_relaxed);
}

std::unique_ptr<Communicator> make_inproc_communicator(int ranks) {
    return std::make_unique<InprocCommunicator>(ranks);
}

void InprocCommunicator::abort(const std::string& reason) {
    {
        std::lock_guard lock(mutex_);
        if (aborted_) return;  // the first reason is the cause; later ones are its echoes
        aborted_ = true;
        reason_ = reason;
    }
    arrived_cv_.notify_all();
}

void InprocCommunicator::reset() {
    std::lock_guard lock(mutex_);
    aborted_ = false;
    mismatch_ = false;
    reason_.clear();
    arrived_ = 0;  // ranks that arrived at the cancelled barrier have left it
}

std::size_t InprocCommunicator::bytes_sent(int rank) const {
    TANDEM_CHECK_AS(ConfigError, rank >= 0 && rank < ranks_)
        << "bytes_sent: rank " << rank << " out of range for a communicator of " << ranks_;
    return bytes_sent_[rank].load(std::memory_order_relaxed);
}

void InprocCommunicator::count_sent(int rank, std::size_t floats) {
    bytes_sent_[rank].fetch_add(floats * sizeof(float), std::memory_order_relaxed);
}

void InprocCommunicator::fail(int rank, int op, const std::string& message) {
    abort(message);  // the other ranks must not wait for this one
    Error error(message);
    std::ostringstream where;
    where << "in " << op_text(op) << " on rank " << rank << " of " << ranks_
          << " (in-process communicator)";
    error.add_context(where.str());
    throw error;
}

void InprocCommunicator::check_args(int rank, int op, const float* data, std::size_t count,
                                    int root) {
    if (rank < 0 || rank >= ranks_) {
        std::ostringstream m;
        m << op_text(op) << ": rank " << rank << " out of range for a communicator of " << ranks_;
        fail(rank, op, m.str());
    }
    if (data == nullptr && count > 0)
        fail(rank, op, op_text(op) + ": null data with count " + std::to_string(count));
    if (root < 0 || root >= ranks_) {
        std::ostringstream m;
        m << op_text(op) << ": root " << root << " out of range for a communicator of " << ranks_;
        fail(rank, op, m.str());
    }
}

// The barrier. With `call`, this rank publishes it first (under the lock, and never once the
// communicator is aborted, so a rank that failed cannot overwrite what a slower rank still
// reads), and the last rank to arrive checks that every rank made the same call.
void InprocCommunicator::wait_all(int rank, int op, const Call* call) {
    std::unique_lock lock(mutex_);
    if (!aborted_) {
        if (call) calls_[rank] = *call;
        const std::uint64_t generation = generation_;
        if (++arrived_ == ranks_) {
            arrived_ = 0;
            if (call) {
                const std::string mismatch = check_calls();
                if (!mismatch.empty()) {
                    aborted_ = true;
                    mismatch_ = true;
                    reason_ = mismatch;
                }
            }
            ++generation_;
            arrived_cv_.notify_all();
        } else {
            arrived_cv_.wait(lock, [&] { return generation_ != generation || aborted_; });
        }
        if (generation_ != generation && !(call && mismatch_)) return;
    }
    const std::string reason = reason_;
    const bool mismatch = mismatch_;
    lock.unlock();
    std::ostringstream where;
    where << "in " << op_text(op) << " on rank " << rank << " of " << ranks_
          << " (in-process communicator)";
    if (mismatch) {
        Error error(reason);
        error.add_context(where.str());
        throw error;
    }
    CancelledError error(reason);
    error.add_context(where.str());
    throw error;
}

std::string InprocCommunicator::check_calls() const {
    const Call& first = calls_[0];
    for (int r = 1; r < ranks_; ++r) {
        const Call& c = calls_[r];
        if (c.op == first.op && c.count == first.count && c.arg == first.arg) continue;
        auto describe = [](const Call& call) {
            std::ostringstream d;
            d << op_text(call.op) << " (count " << call.count;
            if (call.op == op_broadcast || call.op == op_reduce) d << ", root " << call.arg;
            d << ")";
            return d.str();
        };
        std::ostringstream m;
        m << "ranks disagree on the collective: rank 0 called " << describe(first) << ", rank " << r
          << " called " << describe(c);
        return m.str();
    }
    return {};
}

void InprocCommunicator::copy_from(int rank, int source, std::size_t begin, std::size_t end) {
    if (end > begin)
        std::memcpy(calls_[rank].data + begin, calls_[source].data + begin,
                    (end - begin) * sizeof(float));
}

void InprocCommunicator::all_reduce_sum(int rank, float* data, std::size_t count,
                                        ReduceAlgorithm algorithm) {
    const int op = algorithm == ReduceAlgorithm::ring ? op_ring : op_tree;
    check_args(rank, op, data, count, 0);
    const Call call{op, data, count, 0};
    wait_all(rank, op, &call);
    if (ranks_ == 1 || count == 0) return;
    if (algorithm == ReduceAlgorithm::ring) {
        ring_all_reduce(rank, count);
        return;
    }
    tree_reduce(rank, op, count);
    if (rank == 0)
        count_sent(0, static_cast<std::size_t>(ranks_ - 1) * count);
    else
        copy_from(rank, 0, 0, count);
    wait_all(rank, op);
}

void InprocCommunicator::ring_all_reduce(int rank, std::size_t count) {
    const int n = ranks_;
    const ChunkRange own = ring_chunk(count, n, rank);
    float* dst = calls_[rank].data;
    // Reduce-scatter: this rank's chunk, summed in the order the ring would carry it.
    float acc[block];
    for (std::size_t b = own.begin; b < own.end; b += block) {
        const std::size_t len = std::min(block, own.end - b);
        std::memcpy(acc, calls_[(rank + 1) % n].data + b, len * sizeof(float));
        for (int k = 2; k < n; ++k) {
            const float* src = calls_[(rank + k) % n].data + b;
            for (std::size_t i = 0; i < len; ++i) acc[i] += src[i];
        }
        float* out = dst + b;
        for (std::size_t i = 0; i < len; ++i) out[i] = acc[i] + out[i];
    }
    // The others read every chunk of ours but our own in the reduce-scatter, and our own
    // chunk n-1 times in the all-gather: 2(n-1)/n of the data for even chunks.
    const std::size_t own_size = own.end - own.begin;
    count_sent(rank, count - own_size + static_cast<std::size_t>(n - 1) * own_size);
    wait_all(rank, op_ring);
    // All-gather: every other chunk from its owner.
    for (int k = 1; k < n; ++k) {
        const int owner = (rank + k) % n;
        const ChunkRange chunk = ring_chunk(count, n, owner);
        copy_from(rank, owner, chunk.begin, chunk.end);
    }
    wait_all(rank, op_ring);
}

void InprocCommunicator::tree_reduce(int rank, int op, std::size_t count) {
    for (int k = 1; k < ranks_; k *= 2) {
        if (rank % (2 * k) == 0 && rank + k < ranks_) {
            float* dst = calls_[rank].data;
            const float* src = calls_[rank + k].data;
            for (std::size_t i = 0; i < count; ++i) dst[i] += src[i];
        } else if (rank % (2 * k) == k) {
            count_sent(rank, count);
        }
        wait_all(rank, op);
    }
}

void InprocCommunicator::broadcast(int rank, float* data, std::size_t count, int root) {
    check_args(rank, op_broadcast, data, count, root);
    const Call call{op_broadcast, data, count, root};
    wait_all(rank, op_broadcast, &call);
    if (ranks_ == 1 || count == 0) return;
    if (rank == root)
        count_sent(root, static_cast<std::size_t>(ranks_ - 1) * count);
    else
        copy_from(rank, root, 0, count);
    wait_all(rank, op_broadcast);
}

void InprocCommunicator::reduce_sum(int rank, float* data, std::size_t count, int root) {
    check_args(rank, op_reduce, data, count, root);
    const Call call{op_reduce, data, count, root};
    wait_all(rank, op_reduce, &call);
    if (ranks_ == 1 || count == 0) return;
    tree_reduce(rank, op_reduce, count);
    if (root == 0) return;  // tree_reduce ended with a barrier after the last read
    if (rank == root) copy_from(rank, 0, 0, count);
    if (rank == 0) count_sent(0, count);
    wait_all(rank, op_reduce);
}

void InprocCommunicator::barrier(int rank) {
    check_args(rank, op_barrier, nullptr, 0, 0);
    const Call call{op_barrier, nullptr, 0, 0};
    wait_all(rank, op_barrier, &call);
}

}  // namespace tandem

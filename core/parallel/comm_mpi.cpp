#include "parallel/comm_mpi.h"

#include <algorithm>
#include <climits>

#include "base/error.h"
#include "parallel/mpi_world.h"

#if TANDEM_MPI
#include <mpi.h>
#endif

namespace tandem {

int binomial_children(int rank, int size) {
    // Rank r receives from r - lowbit(r) and sends to r + 2^j for every 2^j < lowbit(r)
    // (every 2^j for rank 0) that is still a rank.
    int children = 0;
    for (int step = 1; step < size; step *= 2) {
        if (rank != 0 && step >= (rank & -rank)) break;
        if (rank + step < size) ++children;
    }
    return children;
}

#if TANDEM_MPI

namespace {

// MPI counts are ints: larger buffers go in pieces of this many floats.
constexpr std::size_t piece = std::size_t(1) << 30;
constexpr int tree_tag = 61;

}  // namespace

struct MpiCommunicator::Handle {
    MPI_Comm comm = MPI_COMM_NULL;
};

MpiCommunicator::MpiCommunicator() : handle_(std::make_unique<Handle>()) {
    TANDEM_CHECK_AS(ConfigError, mpi::initialized())
        << "an MPI communicator needs MPI started (run under mpirun; `tandem` starts it then)";
    MPI_Comm_dup(MPI_COMM_WORLD, &handle_->comm);
    MPI_Comm_rank(handle_->comm, &rank_);
    MPI_Comm_size(handle_->comm, &size_);
}

MpiCommunicator::~MpiCommunicator() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && handle_->comm != MPI_COMM_NULL) MPI_Comm_free(&handle_->comm);
}

void MpiCommunicator::check(int rank, const char* what, int root) const {
    TANDEM_CHECK_AS(ConfigError, rank == rank_)
        << "MPI communicator " << what << ": called as rank " << rank << " in process rank "
        << rank_ << " (each process is one rank)";
    TANDEM_CHECK_AS(ConfigError, root >= 0 && root < size_)
        << "MPI communicator " << what << ": root " << root << " out of range for " << size_
        << " processes";
}

void MpiCommunicator::all_reduce_sum(int rank, float* data, std::size_t count,
                                     ReduceAlgorithm algorithm) {
    check(rank, "all_reduce_sum");
    if (size_ == 1 || count == 0) return;
    if (algorithm == ReduceAlgorithm::tree) {
        tree_reduce_to_zero(data, count);
        broadcast(rank, data, count, 0);
        return;
    }
    for (std::size_t at = 0; at < count; at += piece) {
        const int n = static_cast<int>(std::min(piece, count - at));
        MPI_Allreduce(MPI_IN_PLACE, data + at, n, MPI_FLOAT, MPI_SUM, handle_->comm);
    }
    count_sent(2 * static_cast<std::size_t>(size_ - 1) * count / static_cast<std::size_t>(size_));
}

void MpiCommunicator::tree_reduce_to_zero(float* data, std::size_t count) {
    for (int k = 1; k < size_; k *= 2) {
        if (rank_ % (2 * k) == k) {  // hand our partial sum down, and we are done
            for (std::size_t at = 0; at < count; at += piece)
                MPI_Send(data + at, static_cast<int>(std::min(piece, count - at)), MPI_FLOAT,
                         rank_ - k, tree_tag, handle_->comm);
            count_sent(count);
            return;
        }
        if (rank_ + k >= size_) continue;
        scratch_.resize(std::min(piece, count));
        for (std::size_t at = 0; at < count; at += piece) {
            const std::size_t n = std::min(piece, count - at);
            MPI_Recv(scratch_.data(), static_cast<int>(n), MPI_FLOAT, rank_ + k, tree_tag,
                     handle_->comm, MPI_STATUS_IGNORE);
            float* dst = data + at;
            for (std::size_t i = 0; i < n; ++i) dst[i] += scratch_[i];
        }
    }
}

void MpiCommunicator::broadcast(int rank, float* data, std::size_t count, int root) {
    check(rank, "broadcast", root);
    if (size_ == 1 || count == 0) return;
    for (std::size_t at = 0; at < count; at += piece)
        MPI_Bcast(data + at, static_cast<int>(std::min(piece, count - at)), MPI_FLOAT, root,
                  handle_->comm);
    // Binomial from `root`: ranks renumbered so the root is 0.
    count_sent(static_cast<std::size_t>(binomial_children((rank_ - root + size_) % size_, size_)) *
               count);
}

void MpiCommunicator::reduce_sum(int rank, float* data, std::size_t count, int root) {
    check(rank, "reduce_sum", root);
    if (size_ == 1 || count == 0) return;
    tree_reduce_to_zero(data, count);
    if (root == 0) return;
    for (std::size_t at = 0; at < count; at += piece) {
        const int n = static_cast<int>(std::min(piece, count - at));
        if (rank_ == 0) MPI_Send(data + at, n, MPI_FLOAT, root, tree_tag, handle_->comm);
        if (rank_ == root)
            MPI_Recv(data + at, n, MPI_FLOAT, 0, tree_tag, handle_->comm, MPI_STATUS_IGNORE);
    }
    if (rank_ == 0) count_sent(count);
}

void MpiCommunicator::barrier(int rank) {
    check(rank, "barrier");
    if (size_ > 1) MPI_Barrier(handle_->comm);
}

#else  // built without MPI: the type exists, but cannot be made

struct MpiCommunicator::Handle {};

MpiCommunicator::MpiCommunicator() {
    TANDEM_THROW(ConfigError) << "this Tandem was built without MPI (TANDEM_MPI=OFF or no MPI "
                                 "found); install libopenmpi-dev and rebuild";
}
MpiCommunicator::~MpiCommunicator() = default;
void MpiCommunicator::check(int, const char*, int) const {}
void MpiCommunicator::all_reduce_sum(int, float*, std::size_t, ReduceAlgorithm) {}
void MpiCommunicator::tree_reduce_to_zero(float*, std::size_t) {}
void MpiCommunicator::broadcast(int, float*, std::size_t, int) {}
void MpiCommunicator::reduce_sum(int, float*, std::size_t, int) {}
void MpiCommunicator::barrier(int) {}

#endif

void MpiCommunicator::abort(const std::string& reason) {
    mpi::abort_job(reason);
}

std::size_t MpiCommunicator::bytes_sent(int rank) const {
    check(rank, "bytes_sent");
    return bytes_sent_.load();
}

}  // namespace tandem

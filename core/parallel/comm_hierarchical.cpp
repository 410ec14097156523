#include "parallel/comm_hierarchical.h"

#include "base/error.h"

namespace tandem {
namespace {

// The cross leg, run by local rank 0: when it fails, the local ranks waiting for rank 0 in
// the leg after it must not wait on, so the local communicator is aborted with the reason.
template <class Leg>
void cross_leg(InprocCommunicator& local, Leg leg) {
    try {
        leg();
    } catch (const std::exception& e) {
        local.abort(e.what());
        throw;
    }
}

}  // namespace

HierarchicalCommunicator::HierarchicalCommunicator(int local_ranks,
                                                   std::shared_ptr<Communicator> cross, int process)
    : local_(local_ranks), cross_(std::move(cross)), process_(process) {
    TANDEM_CHECK_AS(ConfigError, cross_ != nullptr)
        << "a hierarchical communicator needs a cross-process communicator";
    TANDEM_CHECK_AS(ConfigError, process >= 0 && process < cross_->size())
        << "hierarchical communicator: process " << process << " out of range for "
        << cross_->size() << " processes";
}

int HierarchicalCommunicator::local_rank(int rank, const char* what) const {
    const int local = rank - process_ * local_.size();
    TANDEM_CHECK_AS(ConfigError, local >= 0 && local < local_.size())
        << "hierarchical " << what << ": global rank " << rank << " does not belong to process "
        << process_ << " (its ranks are " << process_ * local_.size() << " .. "
        << (process_ + 1) * local_.size() - 1 << ")";
    return local;
}

void HierarchicalCommunicator::all_reduce_sum(int rank, float* data, std::size_t count,
                                              ReduceAlgorithm algorithm) {
    const int local = local_rank(rank, "all_reduce_sum");
    local_.reduce_sum(local, data, count, 0);
    if (local == 0)
        cross_leg(local_, [&] { cross_->all_reduce_sum(process_, data, count, algorithm); });
    local_.broadcast(local, data, count, 0);
}

void HierarchicalCommunicator::broadcast(int rank, float* data, std::size_t count, int root) {
    const int local = local_rank(rank, "broadcast");
    TANDEM_CHECK_AS(ConfigError, root >= 0 && root < size())
        << "hierarchical broadcast: root " << root << " out of range for " << size() << " ranks";
    const int root_process = root / local_.size(), root_local = root % local_.size();
    // The root's data reaches its process's local rank 0, then every process's, then everyone.
    if (process_ == root_process && root_local != 0)
        local_.broadcast(local, data, count, root_local);
    if (local == 0)
        cross_leg(local_, [&] { cross_->broadcast(process_, data, count, root_process); });
    local_.broadcast(local, data, count, 0);
}

void HierarchicalCommunicator::reduce_sum(int rank, float* data, std::size_t count, int root) {
    const int local = local_rank(rank, "reduce_sum");
    TANDEM_CHECK_AS(ConfigError, root >= 0 && root < size())
        << "hierarchical reduce_sum: root " << root << " out of range for " << size() << " ranks";
    const int root_process = root / local_.size(), root_local = root % local_.size();
    local_.reduce_sum(local, data, count, 0);
    if (local == 0)
        cross_leg(local_, [&] { cross_->reduce_sum(process_, data, count, root_process); });
    // The sum is at the root process's local rank 0; a root elsewhere in it takes a copy.
    if (process_ == root_process && root_local != 0) local_.broadcast(local, data, count, 0);
}

void HierarchicalCommunicator::barrier(int rank) {
    const int local = local_rank(rank, "barrier");
    local_.barrier(local);
    if (local == 0) cross_leg(local_, [&] { cross_->barrier(process_); });
    local_.barrier(local);
}

void HierarchicalCommunicator::abort(const std::string& reason) {
    local_.abort(reason);
    cross_->abort(reason);
}

void HierarchicalCommunicator::reset() {
    local_.reset();
    cross_->reset();
}

std::size_t HierarchicalCommunicator::bytes_sent(int rank) const {
    const int local = local_rank(rank, "bytes_sent");
    return local_.bytes_sent(local) + (local == 0 ? cross_->bytes_sent(process_) : 0);
}

}  // namespace tandem

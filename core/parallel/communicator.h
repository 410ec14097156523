// Communicator: collectives among the replicas of one pipeline stage (one rank per worker group).
//
// Every call is collective: each of the size() ranks makes it, from its own thread, with the
// same count, in the same order; the call returns on a rank once that rank's part is done.
// The engine gives each stage index its own communicator, so stage s of every group reduces
// its gradients with the other groups' stage s while earlier stages are still in backward.
//
// Implementations: in-process (threads, shared memory: comm_inproc), NCCL on GPUs, MPI
// across processes, and any of the host ones staged through host memory for GPUs
// (comm_staged). The data pointers are device memory of the calling rank's device; the
// in-process communicator needs host-accessible devices.
//
// Failure: abort() makes every collective in progress or to come throw CancelledError with
// the reason, on every rank, so a rank that failed elsewhere never leaves the others waiting.
// reset() readies the communicator for the next step once every rank has stopped.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

enum class ReduceAlgorithm {
    ring,  // reduce-scatter then all-gather: each rank moves 2(n-1)/n of the data
    tree,  // binomial tree reduce to rank 0, then broadcast: sums in the canonical pairwise
           // order ((r0 + r1) + (r2 + r3)) + ..., whatever the chunking: deterministic mode
};

std::string_view reduce_algorithm_name(ReduceAlgorithm algorithm);
// "ring" or "tree"; throws ConfigError naming the choices otherwise.
ReduceAlgorithm parse_reduce_algorithm(std::string_view name);

class Communicator {
public:
    virtual ~Communicator() = default;

    virtual int size() const = 0;

    // In place: on return every rank's data holds the elementwise sum over ranks.
    virtual void all_reduce_sum(int rank, float* data, std::size_t count,
                                ReduceAlgorithm algorithm) = 0;
    // Rank `root`'s data is copied to every rank.
    virtual void broadcast(int rank, float* data, std::size_t count, int root) = 0;
    // Tree reduce: on return rank `root` holds the sum (in the canonical pairwise order);
    // other ranks' data is unspecified.
    virtual void reduce_sum(int rank, float* data, std::size_t count, int root) = 0;
    virtual void barrier(int rank) = 0;

    virtual void abort(const std::string& reason) = 0;
    virtual void reset() = 0;

    // Bytes this rank has sent since construction (what the benchmarks report per step).
    virtual std::size_t bytes_sent(int rank) const = 0;
};

// The in-process communicator for `ranks` threads of one process.
std::unique_ptr<Communicator> make_inproc_communicator(int ranks);

class Device;
// A communicator in this process for ranks whose data lies on `devices` (rank r's on
// devices[r]), chosen by that memory: the in-process one for host-accessible devices, NCCL for
// CUDA devices (when the backend is compiled in). Devices the host cannot read go through the
// in-process one too, staged through host memory (comm_staged.h), with `canonical_order`
// (deterministic mode: NCCL does not sum in the canonical pairwise order) and when two of them
// share a GPU (NCCL takes one rank per GPU). ConfigError naming the devices when they mix kinds
// or no communicator serves them.
std::unique_ptr<Communicator> make_device_communicator(const std::vector<Device*>& devices,
                                                       bool canonical_order = false);

}  // namespace tandem

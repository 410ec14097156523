// NcclCommunicator: the Communicator (parallel/communicator.h) on NCCL, for ranks on GPUs.
//
// Each collective runs on the rank's device's communication stream, after the work queued on
// its compute stream (an event orders them) and before any later compute-stream work; the call
// returns once the rank's part is done, as the interface requires. Meanwhile the device's
// other ranks' threads and its compute stream go on: a stage's all-reduce overlaps the backward
// of the stages before it.
//
// Waiting is a poll of the collective's completion event that also watches abort() and
// ncclCommGetAsyncError (NCCL's fault-tolerance pattern), so a rank whose peer failed throws
// instead of hanging. abort() calls ncclCommAbort on every local communicator; reset()
// re-creates them (in-process only: across processes a new unique id is needed).
//
// NCCL picks its own reduction algorithm (ring or tree, see NCCL_ALGO): the ReduceAlgorithm
// argument is accepted and not honoured, so sums are reproducible run to run on one machine
// but not in the in-process communicator's canonical pairwise order.
//
// Ranks: the in-process form has one rank per given device, every rank local. The
// multi-process form holds this process's consecutive ranks (first_rank, first_rank + 1, ...:
// one per GPU it drives) of a communicator over every process, made from a unique id that
// rank 0 creates (nccl_unique_id) and the others receive by any means (the engine broadcasts
// it over MPI). Its abort() runs `on_abort` after aborting the local ranks: a peer process
// waiting in a collective is not released by our local abort, so under MPI the engine passes
// mpi::abort_job, which ends the job as every other failure under MPI does.
// The communicator must go before its devices.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/device.h"
#include "parallel/communicator.h"

namespace tandem {

// NCCL's ncclUniqueId as plain bytes, so it can travel without nccl.h.
using NcclId = std::array<char, 128>;
NcclId nccl_unique_id();

// One rank per device of `devices` (all CUDA devices, distinct GPUs), in that order.
std::unique_ptr<Communicator> make_nccl_communicator(const std::vector<Device*>& devices);
// Ranks first_rank .. first_rank + devices.size() - 1 of `ranks` across processes, on
// `devices` (distinct GPUs); every process calls with the same id, and the call returns once
// every rank has joined. `on_abort` (may be empty) runs after abort() has aborted them.
std::unique_ptr<Communicator> make_nccl_communicator(
    const NcclId& id, int ranks, int first_rank, const std::vector<Device*>& devices,
    std::function<void(const std::string&)> on_abort = {});

}  // namespace tandem

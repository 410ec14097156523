// The MPI job this process belongs to (issue 6): start-up, its rank and size, the job-wide
// abort, and the few collectives the engine and the tools make from one thread.
//
// `tandem` calls initialize() at start when the environment says mpirun launched it (Open
// MPI's OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, Hydra's PMI_SIZE) and finalize() at exit;
// tests may initialise a singleton job (size 1). Without initialisation rank() is 0 and
// size() is 1, so single-process code needs no special case.
//
// Threads: MPI is started with MPI_THREAD_MULTIPLE. The engine's stages reduce their
// gradients concurrently, each from its own worker thread and on its own duplicated
// communicator (make_mpi_communicator), so that no collective of one stage can match another
// stage's; funnelling them through one thread would serialise exactly the overlap the
// per-stage launch exists for. thread_multiple() tells whether the library granted it.
//
// Failure: abort_job() writes the reason to stderr, tagged with the rank, then MPI_Abort()s
// the whole job: mpirun ends every other rank at once, wherever it waits. A rank that dies
// without calling it (a signal, exit without finalize) is noticed by mpirun, which ends the
// job the same way. There is no other way out of a blocking collective that a peer will
// never join, so every failure under MPI with several ranks ends the job.
//
// Built without MPI (TANDEM_MPI=0): built() is false, initialize() throws ConfigError, and
// the rest behave as for a job of one process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parallel/communicator.h"

namespace tandem::mpi {

bool built();
// The environment shows an MPI launcher (mpirun, mpiexec, srun with PMIx) started us.
bool launched();
// Starts MPI (once; later calls do nothing). ConfigError when built without MPI or when the
// library grants less than MPI_THREAD_SERIALIZED.
void initialize();
bool initialized();
bool thread_multiple();
// Ends MPI; every communicator made here must be gone. Does nothing when not initialised.
void finalize();

int rank();
int size();
// This rank's place among the ranks on its node (those sharing its memory, as
// MPI_COMM_TYPE_SHARED finds them), and how many there are: 0 and 1 outside a job.
int local_rank();
int local_size();

// Reports `reason` on stderr and ends the whole job with exit status 1; when MPI is not
// running with several ranks it does nothing (the caller throws as usual).
void abort_job(const std::string& reason);

// Collectives over every rank, from one thread of each (the main thread).
void all_reduce(double* data, std::size_t count, const std::string& op);  // "sum", "min", "max"
void all_reduce_sum(float* data, std::size_t count);
std::vector<std::int64_t> all_gather(std::int64_t value);
void broadcast(void* data, std::size_t bytes, int root);
void barrier();
// Every text of this node's ranks, in local-rank order (each rank on the node calls it).
std::vector<std::string> node_all_gather(const std::string& text);

// A Communicator over a duplicate of the world communicator: one rank per process, called
// from one thread per process at a time. Its abort() ends the job (abort_job).
std::unique_ptr<Communicator> make_mpi_communicator();

}  // namespace tandem::mpi

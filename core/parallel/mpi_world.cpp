#include "parallel/mpi_world.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "base/error.h"
#include "parallel/comm_mpi.h"

#if TANDEM_MPI
#include <mpi.h>
#endif

namespace tandem::mpi {
namespace {

#if TANDEM_MPI
MPI_Comm g_node = MPI_COMM_NULL;  // this node's ranks (initialize() to finalize())
#endif

bool g_initialized = false;
bool g_thread_multiple = false;
int g_rank = 0, g_size = 1;
int g_local_rank = 0, g_local_size = 1;  // among the ranks sharing this node's memory

}  // namespace

bool built() {
    return TANDEM_MPI != 0;
}

// Set in a rank's environment once it has started MPI: a program the rank runs (a recipe's
// `tandem gen-images`, say) inherits the launcher's variables but is no rank of the job.
constexpr const char* kRankMarker = "TANDEM_MPI_RANK_STARTED";

bool launched() {
    if (std::getenv(kRankMarker) != nullptr) return false;
    return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
           std::getenv("PMI_SIZE") != nullptr;
}

bool initialized() {
    return g_initialized;
}
bool thread_multiple() {
    return g_thread_multiple;
}
int rank() {
    return g_rank;
}
int size() {
    return g_size;
}
int local_rank() {
    return g_local_rank;
}
int local_size() {
    return g_local_size;
}

#if TANDEM_MPI

void initialize() {
    if (g_initialized) return;
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    g_initialized = true;
    setenv(kRankMarker, "1", 1);
    g_thread_multiple = provided >= MPI_THREAD_MULTIPLE;
    if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        g_initialized = false;
        g_rank = 0, g_size = 1;
        TANDEM_THROW(ConfigError) << "the MPI library grants thread level " << provided
                                  << "; Tandem needs at least MPI_THREAD_SERIALIZED";
    }
    // The ranks of this node: whatever the launcher's variables say, MPI knows who shares
    // memory with whom.
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &g_node);
    MPI_Comm_rank(g_node, &g_local_rank);
    MPI_Comm_size(g_node, &g_local_size);
}

void finalize() {
    if (!g_initialized) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        MPI_Comm_free(&g_node);
        MPI_Finalize();
    }
    g_initialized = false;
    g_local_rank = 0, g_local_size = 1;
}

void abort_job(const std::string& reason) {
    if (!g_initialized || g_size < 2) return;
    // Once per process: two failing workers must not interleave their reports.
    static std::mutex once;
    std::lock_guard lock(once);
    std::fflush(stdout);
    std::fprintf(stderr, "tandem: rank %d of %d failed: %s\ntandem: ending the MPI job\n", g_rank,
                 g_size, reason.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);  // MPI_Abort does not return; should it, nothing here may go on
}

void all_reduce(double* data, std::size_t count, const std::string& op) {
    MPI_Op mpi_op = MPI_SUM;
    if (op == "min")
        mpi_op = MPI_MIN;
    else if (op == "max")
        mpi_op = MPI_MAX;
    else
        TANDEM_CHECK_AS(ConfigError, op == "sum")
            << "mpi all_reduce: unknown operation '" << op << "' (sum, min or max)";
    if (!g_initialized || g_size == 1 || count == 0) return;
    MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_DOUBLE, mpi_op, MPI_COMM_WORLD);
}

void all_reduce_sum(float* data, std::size_t count) {
    if (!g_initialized || g_size == 1 || count == 0) return;
    MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

std::vector<std::int64_t> all_gather(std::int64_t value) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(g_size), value);
    if (g_initialized && g_size > 1)
        MPI_Allgather(&value, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
    return all;
}

void broadcast(void* data, std::size_t bytes, int root) {
    if (!g_initialized || g_size == 1 || bytes == 0) return;
    MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD);
}

void barrier() {
    if (g_initialized && g_size > 1) MPI_Barrier(MPI_COMM_WORLD);
}

std::vector<std::string> node_all_gather(const std::string& text) {
    if (!g_initialized || g_local_size == 1) return {text};
    const std::size_t n = static_cast<std::size_t>(g_local_size);
    TANDEM_CHECK_AS(ConfigError, text.size() < (std::size_t(1) << 30))
        << "mpi node_all_gather: " << text.size() << " bytes is too long";
    const int mine = static_cast<int>(text.size());
    std::vector<int> lengths(n), offsets(n);
    MPI_Allgather(&mine, 1, MPI_INT, lengths.data(), 1, MPI_INT, g_node);
    std::size_t total = 0;
    for (std::size_t r = 0; r < n; ++r) {
        offsets[r] = static_cast<int>(total);
        total += static_cast<std::size_t>(lengths[r]);
    }
    TANDEM_CHECK_AS(ConfigError, total < (std::size_t(1) << 31))
        << "mpi node_all_gather: " << total << " bytes in all is too long";
    std::string all(total, '\0');
    MPI_Allgatherv(text.data(), mine, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                   MPI_CHAR, g_node);
    std::vector<std::string> texts;
    for (std::size_t r = 0; r < n; ++r)
        texts.push_back(
            all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
    return texts;
}

#else

void initialize() {
    TANDEM_THROW(ConfigError) << "this Tandem was built without MPI (TANDEM_MPI=OFF or no MPI "
                                 "found); install libopenmpi-dev and rebuild";
}
void finalize() {}
void abort_job(const std::string&) {}
void all_reduce(double*, std::size_t, const std::string& op) {
    TANDEM_CHECK_AS(ConfigError, op == "sum" || op == "min" || op == "max")
        << "mpi all_reduce: unknown operation '" << op << "' (sum, min or max)";
}
void all_reduce_sum(float*, std::size_t) {}
std::vector<std::int64_t> all_gather(std::int64_t value) {
    return {value};
}
void broadcast(void*, std::size_t, int) {}
void barrier() {}
std::vector<std::string> node_all_gather(const std::string& text) {
    return {text};
}

#endif

std::unique_ptr<Communicator> make_mpi_communicator() {
    return std::make_unique<MpiCommunicator>();
}

}  // namespace tandem::mpi

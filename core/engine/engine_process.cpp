// Engine, the process-level part (parallel.mpi): joining the MPI job, each stage's
// hierarchical communicator, this process's share of the global batch, rank 0's weights for
// everyone, and evaluation shared out over the processes.
#include <cstring>
#include <sstream>

#include "base/error.h"
#include "device/device.h"
#include "engine/engine_internal.h"
#include "layers/layer.h"
#include "parallel/comm_hierarchical.h"
#include "parallel/comm_staged.h"
#include "parallel/mpi_world.h"
#include "parallel/parallel_schema.h"
#if TANDEM_CUDA
#include "parallel/comm_nccl.h"
#endif

namespace tandem {

void Engine::join_processes() {
    const ParallelOptions& p = options_.parallel;
    TANDEM_CHECK_AS(ConfigError, mpi::initialized())
        << "Engine: parallel.mpi needs an MPI job: run under mpirun (`mpirun -np 2 tandem run "
           "RECIPE`); this process was not started by an MPI launcher";
    processes_ = mpi::size();
    process_ = mpi::rank();
    if (processes_ == 1) return;
    TANDEM_CHECK_AS(ConfigError, p.batch_norm != BatchNormMode::deferred)
        << "Engine: batch_norm = 'deferred' merges statistics within one process only; under "
           "MPI use 'micro' or 'sync'";
    TANDEM_CHECK_AS(ConfigError, p.stages == 1 || mpi::thread_multiple())
        << "Engine: " << p.stages << " stages reduce concurrently over MPI, which needs "
        << "MPI_THREAD_MULTIPLE; this MPI library does not grant it (use one stage per process)";
    // Every process must run the same layout, or their collectives would not match (the
    // parallel options that shape them: the schema's ranks_agree ones), and compute and scale
    // its gradients alike (a rank scaling its loss where another does not would sum gradients
    // of different sizes). Each as a number, the smallest and largest over the ranks compared;
    // where the number is a hash or an enum, `mine` says this rank's value in words.
    struct Agreed {
        std::string name;
        double value;
        std::string mine;
    };
    std::vector<Agreed> agreed;
    for (const auto& option : parallel_option_schema()) {
        if (!option.ranks_agree) continue;
        const OptionValue value = option.get(p);
        agreed.push_back({"parallel." + std::string(option.name), option_as_number(option, value),
                          option_is_list(value) ? option_text(option, value) : ""});
    }
    agreed.push_back(
        {"precision", double(options_.precision), std::string(precision_name(options_.precision))});
    agreed.push_back(
        {"loss_scale", double(scaler_.mode()), std::string(loss_scale_mode_name(scaler_.mode()))});
    agreed.push_back({"initial_loss_scale", double(options_.loss_scale.initial), ""});
    agreed.push_back({"loss_scale_window", double(options_.loss_scale.window), ""});
    std::vector<double> low, high;
    for (const Agreed& a : agreed) low.push_back(a.value);
    high = low;
    mpi::all_reduce(low.data(), low.size(), "min");
    mpi::all_reduce(high.data(), high.size(), "max");
    for (std::size_t i = 0; i < agreed.size(); ++i) {
        if (low[i] == high[i]) continue;
        std::ostringstream which;
        if (!agreed[i].mine.empty())
            which << "this rank's: " << agreed[i].mine;
        else
            which << "from " << low[i] << " to " << high[i];
        TANDEM_THROW(ConfigError)
            << "Engine: the MPI ranks disagree on " << agreed[i].name << " (" << which.str()
            << "); every rank must train alike (layout, precision, loss scaling)";
    }
    // Each stage's replicas reduce through one kind of communicator (MPI from host memory,
    // NCCL on GPUs), so a stage must be on host-accessible devices in every process or in none.
    std::vector<double> host(static_cast<std::size_t>(p.stages));
    for (int s = 0; s < p.stages; ++s) host[std::size_t(s)] = stage_device(0, s).host_accessible();
    std::vector<double> some = host, every = host;  // on every rank alike: all stop or none
    mpi::all_reduce(some.data(), some.size(), "max");
    mpi::all_reduce(every.data(), every.size(), "min");
    for (int s = 0; s < p.stages; ++s)
        TANDEM_CHECK_AS(ConfigError, some[std::size_t(s)] == every[std::size_t(s)])
            << "Engine: stage " << s + 1 << " is on " << stage_device(0, s).name()
            << " here, and on a device "
            << (host[std::size_t(s)] ? "the host cannot read" : "in host memory")
            << " in another MPI rank; every rank must put a stage on the same kind of device";
}

std::unique_ptr<Communicator> Engine::make_stage_communicator(int stage) {
    const ParallelOptions& p = options_.parallel;
    std::vector<Device*> replicas;  // this process's
    for (int g = 0; g < p.groups; ++g) replicas.push_back(&stage_device(g, stage));
    // By the memory the stage's replicas hold: shared memory for CPU devices, NCCL for GPUs,
    // or shared memory staged from GPUs when the sum must take the canonical order.
    if (processes_ == 1) return make_device_communicator(replicas, p.deterministic);
    auto host = [&] {
        return std::make_unique<HierarchicalCommunicator>(
            p.groups, std::shared_ptr<Communicator>(mpi::make_mpi_communicator()), process_);
    };
    if (stage_device(0, stage).host_accessible()) return host();
    if (p.deterministic)
        return std::make_unique<StagedCommunicator>(replicas, host(), global_group(0));
    return make_job_gpu_communicator(replicas);
}

std::unique_ptr<Communicator> Engine::make_job_gpu_communicator(
    const std::vector<Device*>& replicas) {
#if TANDEM_CUDA
    // One NCCL communicator over the stage's GPUs in every process (global rank = process x
    // groups + group), bootstrapped by rank 0's unique id over MPI. Every process makes its
    // stages' communicators in the same order from its main thread, as the broadcasts need.
    NcclId id{};
    if (process_ == 0) id = nccl_unique_id();
    mpi::broadcast(id.data(), id.size(), 0);
    return make_nccl_communicator(id, total_groups(), global_group(0), replicas, mpi::abort_job);
#else
    TANDEM_THROW(ConfigError) << "Engine: no communicator across MPI processes for "
                              << replicas.front()->name() << " in this build";
#endif
}

std::pair<std::int64_t, std::int64_t> Engine::share_batch(std::int64_t n) {
    if (processes_ == 1) return {0, n};
    // One all-gather of (step, n): the step shows every rank is at the same step (a rank
    // that skipped one would pair its collectives with the wrong step's).
    TANDEM_CHECK_AS(ConfigError, n < (std::int64_t(1) << 31))
        << "a batch of " << n << " is too large";
    const std::vector<std::int64_t> all = mpi::all_gather((step_ << 31) | n);
    std::int64_t offset = 0, total = 0;
    for (int r = 0; r < processes_; ++r) {
        const std::int64_t step = all[static_cast<std::size_t>(r)] >> 31;
        const std::int64_t count = all[static_cast<std::size_t>(r)] & ((std::int64_t(1) << 31) - 1);
        TANDEM_CHECK_AS(ConfigError, step == step_)
            << "Engine: MPI rank " << r << " is at step " << step << ", rank " << process_
            << " at step " << step_ << "; every rank must step together";
        if (r < process_) offset += count;
        total += count;
    }
    return {offset, total};
}

void Engine::broadcast_weights() {
    // Rank 0's first replica to every process's, then to the other local replicas.
    auto values = [](Sequential& net) {
        auto all = named_parameters(net), buffers = named_buffers(net);
        all.insert(all.end(), buffers.begin(), buffers.end());
        return all;
    };
    const auto mine = values(*replicas_.front()->net);
    for (const auto& np : mine) {
        Tensor& t = np.parameter->value;
        if (t.device().host_accessible()) {
            mpi::broadcast(t.raw(), t.nbytes(), 0);
            continue;
        }
        // MPI takes host memory: a GPU's tensor crosses through a host copy (once, at start).
        Tensor on_host = t.to(host_device());
        mpi::broadcast(on_host.raw(), on_host.nbytes(), 0);
        t.copy_from(on_host);
    }
    for (std::size_t g = 1; g < replicas_.size(); ++g) {
        const auto theirs = values(*replicas_[g]->net);
        for (std::size_t i = 0; i < mine.size(); ++i)
            theirs[i].parameter->value.copy_from(mine[i].parameter->value);
    }
}

std::size_t Engine::bytes_sent() const {
    std::size_t total = 0;
    for (const auto& comm : communicators_)
        for (int g = 0; g < options_.parallel.groups; ++g)
            total += comm->bytes_sent(global_group(g));
    return total;
}

LossSums Engine::evaluate_share(const Tensor& images, const Tensor& labels) {
    // Every process gets the same batch and evaluates its slice of it.
    const std::int64_t n = images.shape()[0];
    const std::int64_t begin = n * process_ / processes_, end = n * (process_ + 1) / processes_;
    LossSums sums;
    if (end > begin)
        sums = evaluate_local(images.narrow_batch(begin, end - begin),
                              labels.narrow_batch(begin, end - begin));
    double totals[3] = {sums.loss, double(sums.correct), double(sums.count)};
    mpi::all_reduce(totals, 3, "sum");
    return {totals[0], static_cast<std::int64_t>(totals[1]), static_cast<std::int64_t>(totals[2])};
}

}  // namespace tandem

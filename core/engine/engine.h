// Engine: trains a net — forward, loss, backward, optimizer step — on its devices.
//
// G worker groups x S stages on G*S devices (device g*S + s runs stage s of group g). Each
// group holds a replica of the net and takes its shard of every global batch; inside a group
// the net is cut into S stages (unit_placement.h: a chain's contiguous ranges of top-level
// layers, or parallel.placement's lists, whose branches run at the same time), and the
// group's shard flows through them as M micro-batches under a pipeline schedule (GPipe or
// 1F1B). Each stage's worker runs its stage program (program.h: the list the simulator times
// too) op by op, handing activations forward and gradients back through transfers; as soon as
// a stage's gradients are final it all-reduces them, bucket by bucket, with the other groups'
// copies of the stage (while its own last backward and earlier stages' backward go on), then
// takes its optimizer step.
// G = S = M = 1 is plain one-device training.
//
// Every micro-batch's loss is scaled by 1 / (global batch), so the summed gradients are the
// whole batch's: G x S x M training computes what one device computes on the whole batch
// (batch norm aside: it normalises each micro-batch by its own statistics). With loss scaling
// (fp16's mixed precision) the loss's gradient is multiplied by the scale too; each stage divides
// its final gradients by it again and checks them (program.h: unscale_gradients), and a step
// whose gradients are not finite on any stage of any group updates nothing.
//
// Failure: an error on any worker stops the step on every worker (the StepBoard and the
// communicators wake whoever waits) and reaches the caller as the error it was, with the path
// (layer, device, micro-batch) in its context; the engine stays usable.
//
// Determinism: every random draw in a step comes from rng_key(seed, step) and the sample's
// index in the global batch, so a run resumed from a checkpoint (weights, buffers, optimizer
// state, step, seed) continues bit for bit, whatever the layout it was saved under.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "layers/cross_entropy.h"
#include "layers/sequential.h"
#include "optim/loss_scaler.h"
#include "optim/optimizer.h"
#include "optim/schedules.h"
#include "parallel/parallel_options.h"
#include "parallel/program.h"
#include "parallel/unit_placement.h"

namespace tandem {

class Stage;
struct StepPlan;
class Trace;

struct EngineOptions {
    std::shared_ptr<Sequential> net;
    std::shared_ptr<Loss> loss;  // null: CrossEntropy
    std::vector<std::shared_ptr<Device>> devices;
    OptimizerOptions optimizer;
    std::shared_ptr<Schedule> schedule;  // null: the optimizer's lr throughout
    std::uint64_t seed = 1;
    // Activations' memory layout; channels_last lets oneDNN skip layout conversions.
    Layout layout = Layout::contiguous;
    // What the net's convolutions and products compute in (device/precision.h): bf16 and fp16
    // are mixed precision, with float32 weights and everything else in float32. Every device
    // must offer it.
    Precision precision = Precision::fp32;
    // Loss scaling (optim/loss_scaler.h): auto scales dynamically in fp16 only.
    LossScaleOptions loss_scale;
    ParallelOptions parallel;
    // When set, every worker's forward, backward, transfer, all-reduce and optimizer spans are
    // recorded here (write it out with Trace::write: a Chrome trace).
    std::shared_ptr<Trace> trace;
};

struct StepResult {
    double loss = 0;      // mean over the batch
    double accuracy = 0;  // fraction of the batch classified right (0 when the loss has none)
    // The mean of the net's AddLoss terms (layers/add_loss.h), included in `loss`; 0 without.
    double added_loss = 0;
    std::int64_t samples = 0;
    float lr = 0;  // the learning rate this step used
    // With gradient clipping: the global norm of the gradients before clipping (group 0's;
    // synchronous SGD gives every group the same). 0 without.
    double grad_norm = 0;
    // With loss scaling: the scale this step's loss was multiplied by (0 without), and whether
    // its gradients were not finite, so the update was skipped (no weight changed).
    float loss_scale = 0;
    bool skipped = false;
};

// An engine's claim on the net it trains (Layer::claim_for_engine), released when it ends.
class NetClaim {
public:
    explicit NetClaim(const std::shared_ptr<Sequential>& net) : net_(net) {
        if (net_) Layer::claim_for_engine(*net_);
    }
    ~NetClaim() {
        if (net_) Layer::release_from_engine(*net_);
    }
    NetClaim(const NetClaim&) = delete;
    NetClaim& operator=(const NetClaim&) = delete;

private:
    std::shared_ptr<Sequential> net_;
};

class Engine {
public:
    explicit Engine(EngineOptions options);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Places the stages on their devices for batches of `batch` samples of `sample` (C x H x W):
    // with auto_split, profiles the net and chooses the cuts first. step() and evaluate_batch()
    // call it on first use; call it earlier to see the partition before training.
    void prepare(const Shape& sample, std::int64_t batch);
    bool prepared() const { return !stages_.empty(); }
    // The automatic split's table (per stage: layers, time, memory against the cap); empty
    // without auto_split or before prepare().
    const std::string& partition_text() const { return partition_text_; }

    // One training step on a batch: images N x C x H x W f32, labels N i32 (any device).
    StepResult step(const Tensor& images, const Tensor& labels);
    // Forward in evaluation mode; sums over the batch (add them up over a data set).
    LossSums evaluate_batch(const Tensor& images, const Tensor& labels);

    // A checkpoint: weights and buffers by layer name ("model.<name>"), optimizer state
    // ("optim.<name>"), the step and seed, loss scaling's state, and `metadata` (the caller's:
    // epoch, data position). With model averaging also each other group's own
    // ("replica.<g>.model.<name>", "replica.<g>.optim.<name>", g counted from 0: between averages
    // the replicas differ) and the algorithm's state ("average.global.<name>",
    // "average.block_momentum.<name>", "average.center.<name>"), so that a resumed run continues as
    // if never stopped. Under MPI rank 0 writes its groups'. Written atomically: an interrupted
    // save leaves the previous file intact.
    void save(const std::string& path, const std::map<std::string, std::string>& metadata = {});
    // Restores a checkpoint written by save(); returns its metadata. Throws DataError naming
    // the file and the entry when something is missing or does not fit the net.
    std::map<std::string, std::string> load(const std::string& path);

    std::int64_t steps() const { return step_; }
    // Loss scaling's state: its scale and the steps it skipped.
    const LossScaler& loss_scaler() const { return scaler_; }
    // Bytes this process's groups have sent through their communicators since construction
    // (under MPI: the shared-memory legs and the network leg together; with one group per
    // process only the network).
    std::size_t bytes_sent() const;
    std::uint64_t seed() const { return options_.seed; }
    float current_lr() const;
    Sequential& net() { return *options_.net; }
    Device& device() { return *options_.devices.front(); }
    const EngineOptions& options() const { return options_; }
    // Stage s of every group runs units [stage_begin(s), stage_end(s)) of the placement
    // (parallel/unit_placement.h): top-level layers of a chain, or parallel.placement's.
    std::size_t stage_begin(int stage) const;
    std::size_t stage_end(int stage) const;
    // The names of the layers stage s runs, in order ("fc1", or "g.lstm" for a graph's node).
    std::vector<std::string> stage_layer_names(int stage) const;
    Device& stage_device(int group, int stage) const;

private:
    struct Replica;
    // The stage program's inputs for a run of `groups` x `micro_batches` in `mode`.
    ProgramSpec program_spec(Mode mode, int groups, int micro_batches) const;
    // The programs of such a run at the current step, from programs_ once built.
    std::shared_ptr<const std::vector<DeviceProgram>> programs(Mode mode, int groups,
                                                               int micro_batches);
    // Runs a step (training) or a forward-only pass (evaluation) on every worker at once: each
    // stage executes its program up to the barrier.
    void run(StepPlan& plan);
    Stage& stage(int group, int stage) const;
    // The process-level part (engine_process.cpp), for parallel.mpi.
    int total_groups() const { return processes_ * options_.parallel.groups; }
    int global_group(int group) const { return process_ * options_.parallel.groups + group; }
    void join_processes();
    // Stage `stage`'s communicator among the groups (MPI: across processes too).
    std::unique_ptr<Communicator> make_stage_communicator(int stage);
    // Across processes, for a stage on GPUs (this process's `replicas` of it): NCCL over
    // every process's replicas.
    std::unique_ptr<Communicator> make_job_gpu_communicator(const std::vector<Device*>& replicas);
    // This process's first sample in the global batch, and the global batch's size, given
    // this process's batch of n (an all-gather of every process's n and step).
    std::pair<std::int64_t, std::int64_t> share_batch(std::int64_t n);
    void broadcast_weights();
    LossSums evaluate_share(const Tensor& images, const Tensor& labels);
    LossSums evaluate_local(const Tensor& images, const Tensor& labels);
    // Model averaging's part of a checkpoint (engine_average.cpp): save_averaging adds the other
    // groups' own weights and state and the algorithm's state; load_averaging checks the file's
    // (DataError naming `path` and the entry) and returns what applies them, called once the
    // weights are in. A file without them (synchronous SGD's, another layout's) gives every
    // group group 0's, and the algorithm starts again from the loaded weights.
    void save_averaging(std::vector<std::pair<std::string, Tensor>>& tensors) const;
    std::function<void()> load_averaging(const std::map<std::string, Tensor>& by_name,
                                         const std::string& path);

    EngineOptions options_;
    NetClaim claim_{options_.net};  // after options_: claims the net it holds
    LossScaler scaler_{options_.loss_scale, options_.precision};
    // prepare() without its checks: what step() and evaluate_batch() call on first use (their
    // batches' shapes are checked by the layers as they run).
    void place_for(const Shape& sample, std::int64_t batch);
    void place(UnitPlacement units);
    // The automatic split's cuts of the net's units (chain_units with `opening`).
    std::vector<std::size_t> auto_cuts(const Shape& sample, std::int64_t batch, Opening opening);

    // The placement; Error until placed.
    const UnitPlacement& placed() const;
    // The board's edges: the stage graph's.
    int edge_count() const { return static_cast<int>(placed().graph.edges.size()); }

    // The stages' units and stage graph: parallel.placement's, or a chain of top-level layers
    // (parallel.cuts), or of the net's units with its graphs opened (the automatic split). Null
    // until placed.
    std::shared_ptr<const UnitPlacement> units_;
    // Per unit, the bytes of each parameter tensor: what the stage programs' buckets are made of.
    std::vector<std::vector<std::size_t>> unit_parameter_bytes_;
    std::string partition_text_;
    std::vector<std::unique_ptr<Replica>> replicas_;
    std::vector<std::unique_ptr<Communicator>> communicators_;  // one per stage when G > 1
    std::vector<std::unique_ptr<Stage>> stages_;  // index g * S + s; empty until placed
    // Built programs by (training, groups, micro-batches, averages weights this step).
    std::map<std::tuple<bool, int, int, bool>, std::shared_ptr<const std::vector<DeviceProgram>>>
        programs_;
    std::int64_t step_ = 0;
    int processes_ = 1, process_ = 0;  // the MPI job, with parallel.mpi
    // Model averaging's state loaded before the stages were placed: theirs once they are.
    std::map<std::string, Tensor> pending_average_;
};

}  // namespace tandem

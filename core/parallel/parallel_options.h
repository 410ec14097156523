// ParallelOptions: how an engine spreads a net over its devices (groups, stages,
// micro-batches, the pipeline schedule, reductions, batch norm across micro-batches). Read by
// the engine, the stage program (parallel/program.h) and the planner.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "parallel/communicator.h"
#include "parallel/schedule.h"

namespace tandem {

// How batch norm treats micro-batches in training.
enum class BatchNormMode {
    micro,     // normalise and update running statistics per micro-batch (as GPipe does)
    deferred,  // normalise per micro-batch; running statistics from the whole global batch,
               // once per step, so evaluation matches one device
    sync,      // statistics over the whole global batch, gathered across micro-batches and
               // replicas before normalising: exactly one device's training. A stage then runs
               // all its micro-batches together, layer by layer (GPipe order, no 1F1B overlap).
};
std::string_view batch_norm_mode_name(BatchNormMode mode);
// "micro", "deferred" or "sync"; ConfigError naming the choices otherwise.
BatchNormMode parse_batch_norm_mode(std::string_view name);

// What model averaging does every `average_every` steps (parallel/averaging.h has the
// definitions). Buffers (batch-norm statistics) are averaged plainly under every one.
enum class AveragingAlgorithm {
    plain,     // every replica takes the mean of the replicas' weights
    bmuf,      // block momentum (Chen & Huo 2016): the mean moves a global model with momentum
    easgd,     // elastic averaging (Zhang et al. 2015), synchronous: replicas and a centre pull
               // together
    momentum,  // the mean of the weights and of the optimizer's state (momentum, Adam's moments)
};
std::string_view averaging_algorithm_name(AveragingAlgorithm algorithm);
// "plain", "bmuf", "easgd" or "momentum"; ConfigError naming the option and the choices otherwise.
AveragingAlgorithm parse_averaging_algorithm(std::string_view name);

struct ParallelOptions {
    int groups = 1;
    int stages = 1;
    int micro_batches = 1;
    PipelineSchedule pipeline = PipelineSchedule::gpipe;  // the pipeline schedule
    // Where stages 1 .. S-1 begin: S - 1 increasing top-level layer indices (0-based). Empty:
    // cut into stages of nearly equal layer counts.
    std::vector<std::size_t> cuts;
    // Layer-division model parallelism (parallel/unit_placement.h): the stages, each a list of
    // the layers it runs (top-level names, or "graph.node" for a node of a top-level nn.Graph),
    // in device order. Empty: the stages are a chain cut by `cuts`. Not with cuts or auto_split.
    std::vector<std::vector<std::string>> placement;
    // Choose the cuts by profiling instead: each top-level layer's time and memory at the
    // micro-batch size on the first device, then the split that minimises the slowest stage
    // within every device's memory cap (plan/partitioner.h). A top-level graph is cut node by
    // node (unit_placement.h, Opening::graphs). Done by prepare().
    bool auto_split = false;
    ReduceAlgorithm algorithm = ReduceAlgorithm::ring;
    std::size_t bucket_bytes = std::size_t(25) << 20;  // gradient all-reduce buckets
    // Reduce each bucket as soon as its gradients are final, during the stage's last backward
    // micro-batch, on a thread of the stage's own (a ReduceLane), rather than after the whole
    // backward. Deterministic mode and sync batch norm reduce after the backward whatever this
    // says: their gradients (or the communicator) are not free until then.
    bool overlap_backward = true;
    BatchNormMode batch_norm = BatchNormMode::micro;
    // Activation recomputation per stage (S entries, one for every stage, or none): such a
    // stage keeps only each micro-batch's input after forward and runs the forward again just
    // before its backward: less memory, about one more forward of time.
    std::vector<bool> recompute;
    // Every reduction in one canonical order: each micro-batch's gradient is kept apart and the
    // micro-batches of a stage are summed in a pairwise tree over their index, then the
    // replicas in the same tree (the tree all-reduce). With M a power of two, runs with the
    // same micro-batch size give bit-identical weights whatever G and S. Costs M copies of
    // each stage's gradients.
    bool deterministic = false;
    // Model averaging instead of synchronous SGD: 0 is off; k > 0 lets every replica step on
    // its own shard (its own mean gradient, no gradient all-reduce) and averages the weights
    // and buffers of all replicas every k steps, with a tree reduce.
    int average_every = 0;
    AveragingAlgorithm averaging = AveragingAlgorithm::plain;
    // BMUF: the block momentum eta in [0, 1) (0: the paper's 1 - 1/replicas), the block
    // learning rate zeta > 0, and Nesterov-style block momentum (the replicas start each block
    // at the global model plus eta times its last move).
    double block_momentum = 0;
    double block_lr = 1;
    bool block_nesterov = true;
    // EASGD: the moving rate alpha in [0, 1] (0: the paper's beta / replicas with beta = 0.9);
    // alpha x replicas must be at most 1.
    double elastic_alpha = 0;
    // Spread the groups over the processes of the MPI job (mpi_world.h): every process runs
    // `groups` of them, P x groups in all, with the same devices per process. Process r's
    // batches are its share of the global batch (rank order); rank 0's weights are broadcast
    // at placement; gradients and model averages go over a HierarchicalCommunicator per stage;
    // evaluate_batch() sums every process's share; only rank 0 writes checkpoints. A failed
    // step ends the job (mpi::abort_job). Not with batch_norm = 'deferred'.
    bool mpi = false;
};

}  // namespace tandem

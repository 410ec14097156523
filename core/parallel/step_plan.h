// StepPlan: one run of an engine's workers over a batch, shared by every stage while it runs:
// the batch and how it splits into micro-batches, the hand-off board between stages, the
// losses, the deferred batch-norm statistics and the stage programs.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/kernels.h"
#include "layers/batch_statistics.h"
#include "parallel/program.h"
#include "parallel/step_board.h"

namespace tandem {

// One run of every worker over a batch: a training step's forward and backward, or an
// evaluation's forward. Micro-batch k = g * M + m (group g's m-th) covers samples
// [starts[k], starts[k + 1]) of the global batch.
struct StepPlan {
    // `edges`: the stage graph's edge count (a chain of S stages has S + 1).
    StepPlan(Mode mode, int groups, int micro_batches, int edges, const Tensor& images,
             const Tensor& labels)
        : mode(mode), groups(groups), micro_batches(micro_batches), images(images), labels(labels),
          board(groups, edges, micro_batches),
          sums(static_cast<std::size_t>(groups * micro_batches)) {
        const std::int64_t n = images.shape()[0];
        for (int g = 0; g < groups; ++g) {
            const std::int64_t shard_begin = n * g / groups,
                               shard = n * (g + 1) / groups - shard_begin;
            for (int m = 0; m < micro_batches; ++m)
                starts.push_back(shard_begin + shard * m / micro_batches);
        }
        starts.push_back(n);
    }
    std::int64_t start(int k) const { return starts[static_cast<std::size_t>(k)]; }
    std::int64_t count(int k) const { return start(k + 1) - start(k); }

    Mode mode;
    int groups, micro_batches;
    Tensor images, labels;
    std::uint64_t rng = 0;
    float loss_scale = 1;
    // Loss scaling's scale (optim/loss_scaler.h): the loss's gradient is multiplied by it as
    // well, and the unscale_gradients ops divide the gradients by it again.
    float gradient_scale = 1;
    std::int64_t sample_offset = 0;  // of this process's batch in the global batch (MPI)
    // The trace's step: a training step's number (engine:steps() once it is done), or the
    // steps trained before an evaluation.
    std::int64_t step = 0;
    StepBoard board;
    std::vector<std::int64_t> starts;
    std::vector<LossSums> sums;  // per micro-batch, from the stages computing the loss
    // Keeps the AddLoss terms (layers/add_loss.h) of a run of `stages` stages a group: a slot
    // per group, stage and micro-batch, each written by its stage alone.
    void track_added_loss(int stages) {
        added_stages_ = stages;
        added_loss_.assign(static_cast<std::size_t>(groups * stages * micro_batches), 0.0);
    }
    // Where stage `stage` of group `group` adds micro-batch m's terms; null when not tracked.
    double* added_loss_slot(int group, int stage, int m) {
        if (added_loss_.empty()) return nullptr;
        return &added_loss_[static_cast<std::size_t>(
            (group * added_stages_ + stage) * micro_batches + m)];
    }
    // Their sum, in one fixed order.
    double added_loss_total() const {
        double total = 0;
        for (double v : added_loss_) total += v;
        return total;
    }
    // Per group and stage (g * S + s), for deferred batch norm.
    std::vector<BatchStatistics> statistics;
    // Per group and stage (g * S + s), for gradient clipping: the sum of squares of the
    // stage's gradients (its gradient_norm op), read by every stage of the group after the
    // barrier.
    std::vector<double> gradient_squares;
    // Per group and stage (g * S + s), with loss scaling: whether the stage's gradients were all
    // finite once unscaled (its unscale_gradients op), read by every stage after the barrier.
    std::vector<char> gradients_finite;
    // Per group and stage (g * S + s); built once per kind of run and shared (Engine::programs).
    std::shared_ptr<const std::vector<DeviceProgram>> programs;
    const DeviceProgram& program(int device) const {
        return (*programs)[static_cast<std::size_t>(device)];
    }

private:
    std::vector<double> added_loss_;
    int added_stages_ = 0;
};

// Whether every stage of every group found its gradients finite (without loss scaling, where
// nobody looks: true). A step updates no weight anywhere unless they all did.
inline bool all_gradients_finite(const StepPlan& plan) {
    for (char finite : plan.gradients_finite)
        if (!finite) return false;
    return true;
}

// The global norm of group `group`'s gradients: its stages' gradient_squares added in stage
// order (every stage of the group finds the same number).
inline double group_gradient_norm(const StepPlan& plan, int group, int stages) {
    double squares = 0;
    for (int s = 0; s < stages; ++s)
        squares += plan.gradient_squares[static_cast<std::size_t>(group * stages + s)];
    return std::sqrt(squares);
}

}  // namespace tandem

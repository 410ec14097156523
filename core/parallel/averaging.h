// ModelAverage: model averaging's four algorithms for one replica of one stage (issue 18).
//
// Every `average_every` steps each replica of a stage (one per group, across every process)
// calls average() at once; the collectives go through the stage's communicator. With P
// replicas, w_i the replica's weights and A = (1/P) sum_i w_i:
//   plain:    w_i = A.
//   bmuf:     block momentum (Chen & Huo, ICASSP 2016), a global model W and its last move D:
//               G = A - W_start  (W_start: what the replicas began the block from)
//               D = eta D + zeta G;  W = W + D
//               w_i = W + eta D  (Nesterov-style, the default)  or  w_i = W.
//             With Nesterov W_start = W + eta D of the previous block, else W. eta is the block
//             momentum (0 given: 1 - 1/P), zeta the block learning rate (1).
//   easgd:    elastic averaging, synchronous (Zhang, Choromanska & LeCun, NIPS 2015), a centre c:
//               d_i = w_i - c;  w_i = w_i - alpha d_i;  c = c + alpha sum_i d_i
//             (every d_i from the weights before the replicas move); alpha 0 given: 0.9 / P.
//   momentum: w_i = A, and each per-element slot of the optimizer's state (SGD's momentum,
//             Adam's moments) becomes its mean over the replicas; Adam's step count is the
//             same in every replica.
// Buffers (batch-norm running statistics) become their mean under every algorithm.
//
// W, D and c are the same in every replica (each computes them from the same all-reduced
// sums): each stage keeps its copy on its own device, and checkpoints carry group 0's. They
// are taken from the replica's weights when training starts (start(), before the first step,
// when every replica holds the same weights) or come from a checkpoint.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layers/layer.h"
#include "optim/optimizer.h"
#include "parallel/buckets.h"
#include "parallel/parallel_options.h"

namespace tandem {

struct AveragingParts {
    const ParallelOptions* parallel = nullptr;
    int rank = 0, replicas = 1;
    Communicator* communicator = nullptr;
    Device* device = nullptr;
    std::vector<NamedParameter> parameters;  // the stage's, named as in the whole net
    std::vector<NamedParameter> buffers;
    Optimizer* optimizer = nullptr;  // the group's (momentum averages its state)
};

class ModelAverage {
public:
    explicit ModelAverage(AveragingParts parts);

    // The names of the per-parameter tensors an algorithm keeps ("global" and "block_momentum"
    // for bmuf, "center" for easgd, none otherwise); a checkpoint stores "<slot>.<parameter>".
    static std::vector<std::string> state_slots(AveragingAlgorithm algorithm);
    // The block momentum and the elastic moving rate in effect for `replicas`.
    static double effective_block_momentum(const ParallelOptions& parallel, int replicas);
    static double effective_elastic_alpha(const ParallelOptions& parallel, int replicas);

    // Whether the algorithm's state is set (taken at the first step or from a checkpoint).
    bool started() const { return started_ || state_slots(algorithm()).empty(); }
    // Takes the replica's current weights as the global model (bmuf) or the centre (easgd).
    void start();
    // Forgets the state: the next step starts it again from the weights.
    void reset() { started_ = false; }
    // Collective over the stage's replicas: the algorithm's averaging step.
    void average();

    // The state, "<slot>.<parameter>" (empty when not started or when the algorithm keeps none).
    std::vector<std::pair<std::string, Tensor>> state() const;
    // Sets the state from `entries` ("<slot>.<parameter>", any device), which the caller has
    // checked: every slot of every parameter of the stage, shaped like it.
    void load_state(const std::map<std::string, Tensor>& entries);

private:
    AveragingAlgorithm algorithm() const { return parts_.parallel->averaging; }
    // A tensor like parameter i's value (same shape, device, layout).
    Tensor like(std::size_t i) const;
    void average_bmuf();
    void average_easgd();
    void average_momentum();

    AveragingParts parts_;
    bool started_ = false;
    // What is averaged plainly: weights and buffers (plain, bmuf), buffers (easgd).
    std::unique_ptr<GradientBuckets> means_;
    // bmuf: the global model and its last move; easgd: the centre and each w_i - c.
    std::vector<Tensor> global_, move_, center_, difference_;
    std::unique_ptr<GradientBuckets> differences_;
};

}  // namespace tandem

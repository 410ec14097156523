// Pass: what one forward or backward call needs besides its tensors.
//
// It is owned by whoever drives the net (the engine's worker), not by the layers: under a
// pipeline schedule several micro-batches are in flight through the same layer, so what
// backward needs (inputs, masks, statistics, workspaces) is kept per pass in a Tape.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "tensor/tensor.h"

namespace tandem {

class BatchStatistics;
class Device;
class Layer;

enum class Mode { train, eval };

// What each layer saved in forward for its backward, for one micro-batch. Entries are keyed
// by owner (a layer, or the loss) and a slot: a container running several ranges of its layers
// (pipeline stages) keeps one entry per range, keyed by the range's first index.
class Tape {
public:
    void put(const void* owner, std::vector<Tensor> tensors, std::size_t slot = 0) {
        saved_[Key{owner, slot}] = std::move(tensors);
    }
    // Throws when `owner` saved nothing: backward was called without a training forward
    // (callers add which layer on the way up).
    const std::vector<Tensor>& get(const void* owner, std::size_t slot = 0) const;
    bool contains(const void* owner, std::size_t slot = 0) const {
        return saved_.count(Key{owner, slot}) != 0;
    }
    void erase(const void* owner, std::size_t slot = 0) { saved_.erase(Key{owner, slot}); }
    void clear() { saved_.clear(); }
    bool empty() const { return saved_.empty(); }
    // Bytes held by every saved tensor (shared storage counted once per tensor).
    std::size_t bytes() const;

private:
    struct Key {
        const void* owner;
        std::size_t slot;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const {
            return std::hash<const void*>()(k.owner) ^ (k.slot * 0x9e3779b97f4a7c15ULL);
        }
    };
    std::unordered_map<Key, std::vector<Tensor>, KeyHash> saved_;
};

struct Pass {
    Device& device;
    Mode mode = Mode::train;
    int micro_batch = 0;
    Tape& saved;
    // Seeded per (seed, step, micro-batch) so that a replay or a recompute draws the same
    // numbers; each layer mixes in its own name (see base/rng.h).
    std::uint64_t rng_key = 0;
    // Whether the caller of backward uses dx. The engine clears it for a net's first layer,
    // whose input gradient nobody reads: Conv2d and Linear then skip their backward-data
    // kernel and return an undefined tensor (for a first convolution, about half its
    // backward time). Containers set it for each layer they run.
    bool need_dx = true;
    // Index of this micro-batch's first sample in the step's whole (global) batch. Random
    // draws are keyed by sample, not by position in the micro-batch, so a split batch sees
    // the same dropout masks as the whole one.
    std::int64_t first_sample = 0;
    // Where batch norm's batch statistics go in training. Null: each forward folds its own into
    // the running statistics (per micro-batch). Set: forward hands them here, and the engine
    // folds the whole batch's once per step ('deferred' batch norm).
    BatchStatistics* batch_statistics = nullptr;
    // This forward recomputes activations for a backward (activation recomputation): it must
    // not count the batch again in running statistics.
    bool recomputing = false;
    // Synchronised batch norm: set when the engine runs a stage's micro-batches together
    // (Layer::forward_many). It sums per-channel values over every replica of the stage, in
    // place (nothing to do with one group); batch norm then normalises every micro-batch with
    // the whole global batch's statistics.
    std::function<void(std::vector<double>&)> sum_over_replicas = nullptr;
    // What the engine scales a micro-batch's loss gradient by (1 / the global batch: the batch's
    // mean); AddLoss (add_loss.h) scales its term's alike. 0 outside the engine: 1 / the
    // micro-batch's samples.
    float loss_scale = 0;
    // Where AddLoss adds its terms (weight x the loss summed over the samples) for this
    // micro-batch; null: nowhere.
    double* added_loss = nullptr;
};

// Sets pass.need_dx for one call and restores it after.
class NeedDx {
public:
    NeedDx(Pass& pass, bool need) : pass_(pass), saved_(pass.need_dx) { pass.need_dx = need; }
    ~NeedDx() { pass_.need_dx = saved_; }
    NeedDx(const NeedDx&) = delete;
    NeedDx& operator=(const NeedDx&) = delete;

private:
    Pass& pass_;
    bool saved_;
};

}  // namespace tandem

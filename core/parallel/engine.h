// Engine: trains a net — forward, loss, backward, optimizer step — on its devices.
//
// This first engine drives one device: the whole step runs on that device's worker thread,
// and an error anywhere in it reaches the caller as the exception it was, with the path
// (layer, device, micro-batch) in its context. The pipeline engine (stages on several
// devices, micro-batches, replicas) keeps this interface.
//
// Determinism: every random draw in a step comes from rng_key(seed, step), so a run resumed
// from a checkpoint (weights, buffers, optimizer state, step, seed) continues bit for bit.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "layers/cross_entropy.h"
#include "layers/sequential.h"
#include "optim/schedules.h"
#include "optim/sgd.h"

namespace tandem {

struct EngineOptions {
    std::shared_ptr<Sequential> net;
    std::shared_ptr<CrossEntropy> loss;
    std::vector<std::shared_ptr<Device>> devices;
    SgdOptions sgd;
    std::shared_ptr<Schedule> schedule;  // null: sgd.lr throughout
    std::uint64_t seed = 1;
    // Activations' memory layout; channels_last lets oneDNN skip layout conversions.
    Layout layout = Layout::contiguous;
};

struct StepResult {
    double loss = 0;      // mean over the batch
    double accuracy = 0;  // fraction of the batch classified right
    std::int64_t samples = 0;
    float lr = 0;         // the learning rate this step used
};

class Engine {
public:
    explicit Engine(EngineOptions options);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // One training step on a batch: images N x C x H x W f32, labels N i32 (any device).
    StepResult step(const Tensor& images, const Tensor& labels);
    // Forward in evaluation mode; sums over the batch (add them up over a data set).
    LossSums evaluate_batch(const Tensor& images, const Tensor& labels);

    // A checkpoint: weights and buffers by layer name ("model.<name>"), optimizer state
    // ("optim.<name>"), the step and seed, and `metadata` (the caller's: epoch, data position).
    // Written atomically: an interrupted save leaves the previous file intact.
    void save(const std::string& path, const std::map<std::string, std::string>& metadata = {});
    // Restores a checkpoint written by save(); returns its metadata. Throws DataError naming
    // the file and the entry when something is missing or does not fit the net.
    std::map<std::string, std::string> load(const std::string& path);

    std::int64_t steps() const { return step_; }
    std::uint64_t seed() const { return options_.seed; }
    float current_lr() const;
    Sequential& net() { return *options_.net; }
    Device& device() { return *options_.devices.front(); }
    const EngineOptions& options() const { return options_; }

private:
    Tensor to_device_input(const Tensor& images) const;

    EngineOptions options_;
    Sgd sgd_;
    std::int64_t step_ = 0;
};

}  // namespace tandem

// Optimizer: what every optimizer (SGD, Adam, AdamW) shares, and the options that choose one.
//
// An optimizer keeps its state per parameter name in slots ("momentum", "exp_avg", "step"),
// so it works on any set of parameters (a whole net, or the slice a pipeline stage holds) and
// its state survives a checkpoint round trip as "<slot>.<parameter name>" tensors. A slot is
// either shaped like its parameter (on the parameter's device, in its layout) or one float on
// the host (a step count: PyTorch keeps Adam's step as a float tensor too).
// Workers may call step() at once on disjoint parameter sets (each stage steps its own slice):
// the slot map is locked, the updates run unlocked on each parameter's device.
// The learning rate comes with each step (from a Schedule), not from the options, so a
// schedule and a resumed run agree on every step's rate.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "layers/layer.h"

namespace tandem {

struct SgdOptions {
    float lr = 0.01f, momentum = 0.f, dampening = 0.f, weight_decay = 0.f;
    bool nesterov = false;
};

struct AdamOptions {
    float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.f;
    // AdamW: the weights shrink by lr * weight_decay apart from the gradient (Loshchilov and
    // Hutter) instead of weight_decay * w joining the gradient (Adam's L2 penalty).
    bool decoupled = false;
};

enum class OptimizerKind { sgd, adam };

// The optimizer of a run, as T.optim.SGD{} / Adam{} / AdamW{} give it.
struct OptimizerOptions {
    OptimizerKind kind = OptimizerKind::sgd;
    SgdOptions sgd;
    AdamOptions adam;
    // When > 0, the engine scales each step's gradients so that their global norm (over every
    // parameter of the net, as torch.nn.utils.clip_grad_norm_ computes it) is at most this.
    float clip_norm = 0.f;

    float lr() const { return kind == OptimizerKind::sgd ? sgd.lr : adam.lr; }
    // Parameter-sized state tensors kept per parameter (what a planner counts as memory).
    int state_buffers() const;
    // "SGD(lr 0.1, momentum 0.9)", "AdamW(lr 0.001, betas (0.9, 0.999), weight_decay 0.01)".
    std::string description() const;
};

class Optimizer {
public:
    virtual ~Optimizer() = default;
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;

    // "SGD", "Adam", "AdamW": how messages and state errors name it.
    const std::string& name() const { return name_; }

    // One step at learning rate `lr` over `params` (from named_parameters(net)). Parameters
    // without a gradient tensor (buffers) are skipped.
    void step(const std::vector<NamedParameter>& params, float lr);

    // Sets every gradient in `params` to zero.
    static void zero_grad(const std::vector<NamedParameter>& params);

    // The state for checkpoints: "<slot>.<parameter name>" tensors, sorted by name (empty
    // before the first step or when the optimizer keeps none).
    std::vector<std::pair<std::string, Tensor>> state() const;

    // Restores state() output for `params`, placing each slot on its parameter's device. An
    // empty state means "no step taken yet" and clears the slots. Otherwise every trainable
    // parameter needs each of its slots: DataError on a missing entry, an entry of the wrong
    // shape or type, or an entry that names no slot of a parameter.
    void load_state(const std::vector<std::pair<std::string, Tensor>>& state,
                    const std::vector<NamedParameter>& params);

protected:
    struct Slot {
        std::string name;         // "momentum"
        bool per_element = true;  // shaped like the parameter; false: one float on the host
    };
    Optimizer(std::string name, std::vector<Slot> slots);

    // One parameter's update; `lr` is checked already.
    virtual void update(const std::string& name, Parameter& param, float lr) = 0;

    // Parameter `name`'s tensor of slot `slot`, created zero-filled on first use (then
    // `created` is set). A per-element slot follows its parameter to its device and layout.
    Tensor& slot(const std::string& slot, const std::string& name, const Tensor& value,
                 bool& created);

private:
    std::string name_;
    std::vector<Slot> slots_;
    mutable std::mutex mutex_;
    std::map<std::string, Tensor> state_;  // "<slot>.<parameter name>"
};

// What gradients are multiplied by when their global norm is `norm` and the limit `clip_norm`:
// clip_norm / (norm + 1e-6) where that is below 1, else 1 (torch.nn.utils.clip_grad_norm_).
double clip_factor(double norm, float clip_norm);

// The optimizer `options` describe. ConfigError naming the optimizer and option when one is
// out of range (PyTorch's rules: e.g. momentum in [0, 1), betas in [0, 1), eps > 0).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& options);

}  // namespace tandem

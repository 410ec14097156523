// Loss scaling: what keeps half-precision gradients from underflowing.
//
// In fp16 an incoming gradient below 2^-24 rounds to zero where its kernels read it. Scaling
// the loss by S scales every gradient by S (backward is linear in the gradient arriving), so
// small gradients stay representable; the optimizer then sees them divided by S again. The
// scales used here are powers of two unless the user gives another: scaling by them is exact in
// binary floating point, so a run with loss scaling computes the very gradients of one without
// (barring overflow), bit for bit.
//
// Too large a scale overflows: some gradient becomes inf or NaN. The step is then skipped (no
// weight and no optimizer state changes) and, with the dynamic scale, S halves; after `window`
// steps in a row with finite gradients it doubles (PyTorch's GradScaler and apex's dynamic
// scaler work the same way, with the same defaults). bfloat16 has float32's range and needs
// none of this; `auto` scales dynamically in fp16 only.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/enum_names.h"
#include "device/precision.h"

namespace tandem {

enum class LossScaleMode { automatic, none, fixed, dynamic };

// T.Engine's loss_scale option's names.
inline constexpr std::array<EnumName<LossScaleMode>, 4> kLossScaleModeNames{{
    {LossScaleMode::automatic, "auto"},
    {LossScaleMode::none, "none"},
    {LossScaleMode::fixed, "fixed"},
    {LossScaleMode::dynamic, "dynamic"},
}};
inline std::string_view loss_scale_mode_name(LossScaleMode mode) {
    return enum_name(kLossScaleModeNames, mode);
}
// ConfigError listing the names.
inline LossScaleMode parse_loss_scale_mode(std::string_view text) {
    return parse_enum(kLossScaleModeNames, text, "unknown loss_scale");
}

struct LossScaleOptions {
    LossScaleMode mode = LossScaleMode::automatic;
    // The dynamic scale's first value, or the fixed scale.
    float initial = 65536.f;
    // Steps in a row with finite gradients after which the dynamic scale doubles.
    std::int64_t window = 2000;
};

// `automatic` resolved for a run in `precision` (dynamic in fp16, else none); other modes as
// given.
LossScaleMode resolve_loss_scale(LossScaleMode mode, Precision precision);

class LossScaler {
public:
    // ConfigError for an initial scale that is not a finite number > 0 or a window < 1.
    LossScaler(LossScaleOptions options, Precision precision);

    bool enabled() const { return mode_ != LossScaleMode::none; }
    LossScaleMode mode() const { return mode_; }
    // What the loss is multiplied by this step (1 without scaling).
    float scale() const { return scale_; }
    // After a step's backward: whether every gradient was finite. A non-finite step is skipped
    // by the caller; the dynamic scale halves, and doubles after `window` finite steps in a
    // row. Error when the gradients are not finite even at a scale of 1 or below (dynamic: the
    // scale cannot go on halving, the loss itself has diverged).
    void record(bool finite);
    std::int64_t skipped() const { return skipped_; }

    // What a checkpoint keeps of it (engine_checkpoint.cpp writes and reads it as metadata).
    struct State {
        float scale = 1;
        std::int64_t good_steps = 0;  // finite steps since the scale last changed
        std::int64_t skipped = 0;
    };
    State state() const { return {scale_, good_steps_, skipped_}; }
    // Continues from a saved state. A fixed scale is the run's option, which a resumed run may
    // change: only its count of skips is taken. Error for a scale that is not finite and > 0.
    void restore(const State& state);
    // As at the start of a run (a checkpoint written without loss scaling).
    void restart() { scale_ = enabled() ? initial_ : 1.f, good_steps_ = 0, skipped_ = 0; }

private:
    LossScaleMode mode_;
    float initial_, scale_;
    std::int64_t window_, good_steps_ = 0, skipped_ = 0;
};

}  // namespace tandem

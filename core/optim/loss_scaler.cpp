#include "optim/loss_scaler.h"

#include <cmath>
#include <limits>

#include "base/error.h"

namespace tandem {

LossScaleMode resolve_loss_scale(LossScaleMode mode, Precision precision) {
    if (mode != LossScaleMode::automatic) return mode;
    return precision == Precision::fp16 ? LossScaleMode::dynamic : LossScaleMode::none;
}

LossScaler::LossScaler(LossScaleOptions options, Precision precision)
    : mode_(resolve_loss_scale(options.mode, precision)), initial_(options.initial), scale_(1.f),
      window_(options.window) {
    TANDEM_CHECK_AS(ConfigError, std::isfinite(initial_) && initial_ > 0)
        << "initial_loss_scale must be a finite number > 0, got " << initial_;
    TANDEM_CHECK_AS(ConfigError, window_ >= 1)
        << "loss_scale_window must be at least 1 step, got " << window_;
    if (enabled()) scale_ = initial_;
}

void LossScaler::record(bool finite) {
    if (!enabled()) return;
    if (finite) {
        if (mode_ != LossScaleMode::dynamic || ++good_steps_ < window_) return;
        good_steps_ = 0;
        // Doubling stops where a float would overflow: the scale then stays as large as it can.
        if (scale_ <= std::numeric_limits<float>::max() / 2) scale_ *= 2;
        return;
    }
    ++skipped_;
    good_steps_ = 0;
    if (mode_ != LossScaleMode::dynamic) return;
    // Halving cures gradients that overflowed because of the scale; at a scale of 1 or less
    // they are not finite on their own: the loss or the data is, and skipping steps forever
    // would hide it.
    TANDEM_CHECK(scale_ > 1)
        << "the gradients are not finite even with the loss scaled by " << scale_
        << ": the loss has diverged (lower the learning rate, or look for inf or NaN in the "
           "data); the step was skipped";
    scale_ /= 2;
}

void LossScaler::restore(const State& state) {
    TANDEM_CHECK(std::isfinite(state.scale) && state.scale > 0 && state.good_steps >= 0 &&
                 state.skipped >= 0)
        << "a loss scale of " << state.scale << " cannot be restored";
    if (mode_ == LossScaleMode::dynamic) scale_ = state.scale, good_steps_ = state.good_steps;
    skipped_ = state.skipped;
}

}  // namespace tandem

#include "optim/loss_scaler.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "base/error.h"

namespace tandem {
namespace {

// The metadata a checkpoint keeps the scaler's state under.
constexpr const char* kScaleKey = "loss_scale";
constexpr const char* kGoodStepsKey = "loss_scale_good_steps";
constexpr const char* kSkippedKey = "loss_scale_skipped";

// A whole number >= 0 as save() writes it; -1 for anything else.
std::int64_t whole_number(const std::string& text) {
    if (text.empty() || text.size() > 18 ||
        text.find_first_not_of("0123456789") != std::string::npos)
        return -1;
    return std::stoll(text);
}

}  // namespace

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

void LossScaler::save(std::map<std::string, std::string>& meta) const {
    if (!enabled()) return;
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", static_cast<double>(scale_));  // round-trips a float
    meta[kScaleKey] = text;
    meta[kGoodStepsKey] = std::to_string(good_steps_);
    meta[kSkippedKey] = std::to_string(skipped_);
}

void LossScaler::restore(const std::map<std::string, std::string>& meta, const std::string& path) {
    if (!enabled()) return;
    const auto scale_at = meta.find(kScaleKey);
    if (scale_at == meta.end()) {  // written without loss scaling: start afresh
        scale_ = initial_, good_steps_ = 0, skipped_ = 0;
        return;
    }
    char* end = nullptr;
    const float scale = std::strtof(scale_at->second.c_str(), &end);
    TANDEM_CHECK_AS(DataError, end != scale_at->second.c_str() && *end == '\0' &&
                                   std::isfinite(scale) && scale > 0)
        << path << ": metadata '" << kScaleKey << "' must be a finite number > 0, got '"
        << scale_at->second << "'";
    auto count = [&](const char* key) {
        const auto it = meta.find(key);
        TANDEM_CHECK_AS(DataError, it != meta.end())
            << path << ": metadata '" << key << "' is missing (it has '" << kScaleKey << "')";
        const std::int64_t n = whole_number(it->second);
        TANDEM_CHECK_AS(DataError, n >= 0)
            << path << ": metadata '" << key << "' must be a whole number >= 0, got '" << it->second
            << "'";
        return n;
    };
    const std::int64_t good_steps = count(kGoodStepsKey), skipped = count(kSkippedKey);
    // A fixed scale is the run's option, which a resumed run may change; a dynamic one is state.
    if (mode_ == LossScaleMode::dynamic) scale_ = scale, good_steps_ = good_steps;
    skipped_ = skipped;
}

}  // namespace tandem

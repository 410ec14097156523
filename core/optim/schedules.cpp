#include "optim/schedules.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "base/error.h"

namespace tandem {
namespace {

// The schedules are made by T.schedule.Cosine{...} and its kin, so a message names the
// constructor and the option as the user wrote them there ("T.schedule.Hybrid: option 'switch'
// must be in (0, 1], got 0"), as the Lua checks in front of them do (issue 19).
void check_rate(const char* schedule, const char* option, float value) {
    TANDEM_CHECK_AS(ConfigError, std::isfinite(value) && value >= 0)
        << "T.schedule." << schedule << ": option '" << option
        << "' must be a finite number >= 0, got " << value;
}

void check_steps(const char* schedule, const char* option, std::int64_t value, std::int64_t least) {
    TANDEM_CHECK_AS(ConfigError, value >= least)
        << "T.schedule." << schedule << ": option '" << option << "' must be >= " << least
        << ", got " << value;
}

void check_gamma(const char* schedule, float gamma) {
    TANDEM_CHECK_AS(ConfigError, std::isfinite(gamma) && gamma > 0)
        << "T.schedule." << schedule << ": option 'gamma' must be a finite number > 0, got "
        << gamma;
}

void check_step(std::int64_t step, const Schedule& s) {
    TANDEM_CHECK_AS(ConfigError, step >= 0) << "learning rate asked for step " << step << " of "
                                            << s.describe() << "; steps count from 0";
}

// Six significant digits, as a person writes a rate: "0.1", not "0.100000001".
std::string text(float value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

}  // namespace

ConstantSchedule::ConstantSchedule(float lr) : lr_(lr) {
    check_rate("Constant", "lr", lr);
}

float ConstantSchedule::lr(std::int64_t step) const {
    check_step(step, *this);
    return lr_;
}

std::string ConstantSchedule::describe() const {
    return "constant(lr=" + text(lr_) + ")";
}

StepSchedule::StepSchedule(float lr, std::int64_t step_size, float gamma)
    : lr_(lr), step_size_(step_size), gamma_(gamma) {
    check_rate("Step", "lr", lr);
    check_steps("Step", "step_size", step_size, 1);
    check_gamma("Step", gamma);
}

float StepSchedule::lr(std::int64_t step) const {
    check_step(step, *this);
    return static_cast<float>(lr_ * std::pow(double(gamma_), double(step / step_size_)));
}

std::string StepSchedule::describe() const {
    return "step(lr=" + text(lr_) + ", step_size=" + std::to_string(step_size_) +
           ", gamma=" + text(gamma_) + ")";
}

MultiStepSchedule::MultiStepSchedule(float lr, std::vector<std::int64_t> milestones, float gamma)
    : lr_(lr), milestones_(std::move(milestones)), gamma_(gamma) {
    check_rate("MultiStep", "lr", lr);
    check_gamma("MultiStep", gamma);
    for (std::size_t i = 0; i < milestones_.size(); ++i) {
        check_steps("MultiStep", "milestones", milestones_[i], 0);
        TANDEM_CHECK_AS(ConfigError, i == 0 || milestones_[i] > milestones_[i - 1])
            << "T.schedule.MultiStep: option 'milestones' must be strictly increasing, got "
            << milestones_[i - 1] << " then " << milestones_[i];
    }
}

float MultiStepSchedule::lr(std::int64_t step) const {
    check_step(step, *this);
    const auto passed =
        std::upper_bound(milestones_.begin(), milestones_.end(), step) - milestones_.begin();
    return static_cast<float>(lr_ * std::pow(double(gamma_), double(passed)));
}

std::string MultiStepSchedule::describe() const {
    std::string list;
    for (auto m : milestones_) {
        if (!list.empty()) list += ',';
        list += std::to_string(m);
    }
    return "multistep(lr=" + text(lr_) + ", milestones=[" + list + "], gamma=" + text(gamma_) + ")";
}

CosineSchedule::CosineSchedule(float lr, std::int64_t total_steps, float min_lr)
    : lr_(lr), total_steps_(total_steps), min_lr_(min_lr) {
    check_rate("Cosine", "lr", lr);
    check_rate("Cosine", "min_lr", min_lr);
    check_steps("Cosine", "total_steps", total_steps, 1);
}

float CosineSchedule::lr(std::int64_t step) const {
    check_step(step, *this);
    if (step >= total_steps_) return min_lr_;
    const double phase = std::numbers::pi * double(step) / double(total_steps_);
    return static_cast<float>(min_lr_ + (double(lr_) - min_lr_) * 0.5 * (1.0 + std::cos(phase)));
}

std::string CosineSchedule::describe() const {
    return "cosine(lr=" + text(lr_) + ", total_steps=" + std::to_string(total_steps_) +
           ", min_lr=" + text(min_lr_) + ")";
}

WarmupSchedule::WarmupSchedule(std::shared_ptr<Schedule> after, std::int64_t warmup_steps,
                               float start_factor)
    : after_(std::move(after)), warmup_steps_(warmup_steps), start_factor_(start_factor) {
    TANDEM_CHECK_AS(ConfigError, after_ != nullptr)
        << "T.schedule.Warmup: option 'after' must be a schedule, got none";
    check_steps("Warmup", "steps", warmup_steps, 0);
    TANDEM_CHECK_AS(ConfigError,
                    std::isfinite(start_factor) && start_factor >= 0 && start_factor <= 1)
        << "T.schedule.Warmup: option 'start_factor' must be a number in [0, 1], got "
        << start_factor;
}

float WarmupSchedule::lr(std::int64_t step) const {
    check_step(step, *this);
    if (step >= warmup_steps_) return after_->lr(step - warmup_steps_);
    const double t = double(step) / double(warmup_steps_);
    return static_cast<float>(after_->lr(0) * (start_factor_ + (1.0 - start_factor_) * t));
}

std::string WarmupSchedule::describe() const {
    return "warmup(steps=" + std::to_string(warmup_steps_) +
           ", start_factor=" + text(start_factor_) + ", then " + after_->describe() + ")";
}

HybridCosineLinearSchedule::HybridCosineLinearSchedule(float lr, std::int64_t total_steps,
                                                       float switch_fraction, float min_lr)
    : lr_(lr), total_steps_(total_steps), switch_fraction_(switch_fraction), min_lr_(min_lr) {
    check_rate("Hybrid", "lr", lr);
    check_rate("Hybrid", "min_lr", min_lr);
    check_steps("Hybrid", "total_steps", total_steps, 1);
    TANDEM_CHECK_AS(ConfigError,
                    std::isfinite(switch_fraction) && switch_fraction > 0 && switch_fraction <= 1)
        << "T.schedule.Hybrid: option 'switch' must be a number in (0, 1], got " << switch_fraction;
}

double HybridCosineLinearSchedule::cosine(double step) const {
    const double phase = std::numbers::pi * step / double(total_steps_);
    return min_lr_ + (double(lr_) - min_lr_) * 0.5 * (1.0 + std::cos(phase));
}

float HybridCosineLinearSchedule::lr(std::int64_t step) const {
    check_step(step, *this);
    if (step >= total_steps_) return min_lr_;
    // The switch lies between steps in general; measuring the line from the exact switch
    // point (not a rounded step) keeps the two pieces meeting in one value.
    const double switch_step = double(switch_fraction_) * double(total_steps_);
    if (double(step) <= switch_step) return static_cast<float>(cosine(double(step)));
    const double at_switch = cosine(switch_step);
    const double t = (double(step) - switch_step) / (double(total_steps_) - switch_step);
    return static_cast<float>(at_switch + (double(min_lr_) - at_switch) * t);
}

std::string HybridCosineLinearSchedule::describe() const {
    return "hybrid(lr=" + text(lr_) + ", total_steps=" + std::to_string(total_steps_) +
           ", switch=" + text(switch_fraction_) + ", min_lr=" + text(min_lr_) + ")";
}

}  // namespace tandem

// Learning-rate schedules: a pure function from the step (counted from 0) to the rate.
//
// Schedules hold no state, so a resumed run asks for the rate of its step and gets exactly
// what the uninterrupted run used. Constructors throw ConfigError on nonsense (negative or zero
// step counts where a span is needed, a fraction outside (0, 1], negative rates); lr() throws
// ConfigError for a negative step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tandem {

class Schedule {
public:
    virtual ~Schedule() = default;
    virtual float lr(std::int64_t step) const = 0;
    // One line for logs: "cosine(lr=0.1, total_steps=1000, min_lr=0)".
    virtual std::string describe() const = 0;
};

class ConstantSchedule final : public Schedule {
public:
    explicit ConstantSchedule(float lr);
    float lr(std::int64_t step) const override;
    std::string describe() const override;

private:
    float lr_;
};

// lr * gamma^floor(step / step_size) (PyTorch's StepLR).
class StepSchedule final : public Schedule {
public:
    StepSchedule(float lr, std::int64_t step_size, float gamma);
    float lr(std::int64_t step) const override;
    std::string describe() const override;

private:
    float lr_;
    std::int64_t step_size_;
    float gamma_;
};

// lr * gamma^(number of milestones <= step); milestones strictly increasing (PyTorch's
// MultiStepLR).
class MultiStepSchedule final : public Schedule {
public:
    MultiStepSchedule(float lr, std::vector<std::int64_t> milestones, float gamma);
    float lr(std::int64_t step) const override;
    std::string describe() const override;

private:
    float lr_;
    std::vector<std::int64_t> milestones_;
    float gamma_;
};

// min_lr + (lr - min_lr) * (1 + cos(pi * step / total_steps)) / 2, then min_lr from
// total_steps on (PyTorch's CosineAnnealingLR over one half period).
class CosineSchedule final : public Schedule {
public:
    CosineSchedule(float lr, std::int64_t total_steps, float min_lr = 0.f);
    float lr(std::int64_t step) const override;
    std::string describe() const override;

private:
    float lr_;
    std::int64_t total_steps_;
    float min_lr_;
};

// Linear warmup in front of another schedule: from start_factor * after.lr(0) at step 0 to
// after.lr(0) at warmup_steps, then after.lr(step - warmup_steps).
class WarmupSchedule final : public Schedule {
public:
    WarmupSchedule(std::shared_ptr<Schedule> after, std::int64_t warmup_steps, float start_factor);
    float lr(std::int64_t step) const override;
    std::string describe() const override;

private:
    std::shared_ptr<Schedule> after_;
    std::int64_t warmup_steps_;
    float start_factor_;
};

// Cosine decay from lr towards min_lr, as if the cosine spanned all total_steps, over the first
// switch_fraction of the steps; then a straight line from the value reached at the switch to
// min_lr at total_steps (continuous at the switch), and min_lr after. switch_fraction = 1 is
// the plain cosine schedule.
class HybridCosineLinearSchedule final : public Schedule {
public:
    HybridCosineLinearSchedule(float lr, std::int64_t total_steps, float switch_fraction = 0.5f,
                               float min_lr = 0.f);
    float lr(std::int64_t step) const override;
    std::string describe() const override;

private:
    double cosine(double step) const;

    float lr_;
    std::int64_t total_steps_;
    float switch_fraction_;
    float min_lr_;
};

}  // namespace tandem

// MeasuredCostModel: costs for the CPU devices here, from the profiler's figures at each
// micro-batch size, taken on a device with the topology device's thread count and cached, and
// this machine's probes (machine_probe.h) for copies, hand-offs, contention and all-reduces.
// With a MeasurementCache, what earlier runs measured is read instead of measured again, and
// what this one measures is kept for the next.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "layers/sequential.h"
#include "plan/cost_model.h"
#include "plan/machine_probe.h"
#include "plan/measurement_cache.h"
#include "plan/profiler.h"

namespace tandem {

class MeasuredCostModel final : public CostModel {
public:
    // profile(threads, batch, after_step): the net profiled on a CPU device with that many
    // threads; `after_step`, when set, goes to ProfileOptions::after_step.
    using Profiler = std::function<NetProfile(int threads, std::int64_t batch, StepEnd after_step)>;
    // This machine's copy, hand-off figures (measure_machine_figures: about 0.2 s).
    using MachineProbe = std::function<MachineFigures()>;
    // `rounds`: how many times prefetch() profiles each batch size (see there). `cache`: where
    // the figures of earlier runs are read from and this one's are kept (none: measure all);
    // `machine` runs only when it holds no machine figures.
    MeasuredCostModel(NetShapes shapes, bool momentum, Profiler profiler, MachineProbe machine,
                      int rounds = 1, std::shared_ptr<const MeasurementCache> cache = nullptr);
    std::vector<LayerCost> layer_costs(const TopologyDevice& device,
                                       std::int64_t batch) const override;
    double loss_ms(const TopologyDevice& device, std::int64_t batch) const override;
    double update_ms(const TopologyDevice& device, std::int64_t batch, std::size_t parameter_bytes,
                     std::size_t parameter_tensors) const override;
    double copy_gbs() const override { return machine_.copy_gbs; }
    // Read from sysfs, not measured: this machine's last-level cache.
    std::size_t cache_bytes() const override { return cache_bytes_; }
    double handoff_ms() const override { return machine_.handoff_ms; }
    double busy_handoff_ms() const override { return machine_.busy_handoff_ms; }
    double crowded_handoff_ms() const override { return machine_.crowded_handoff_ms; }
    // Profiles every batch size not yet measured, `rounds` times, the sizes taking turns, and
    // keeps each figure's smallest over the rounds. Other work on the machine only ever adds
    // time and comes in bursts of a fraction of a second to seconds: measured one after
    // another, a burst can fall on every iteration of one size and skew every plan using it;
    // taking turns spreads each size's rounds over the whole measurement.
    void prefetch(const TopologyDevice& device, std::vector<std::int64_t> batches) const override;
    // Measured once per batch: the net's step on `cores` one-thread devices at once (passing a
    // barrier after every step, as the engine's workers do) against its one-thread profile,
    // interpolated linearly for fewer busy devices; and, when first asked about more busy
    // devices than cores, on twice as many, beyond the proportional share. The median of three
    // trials.
    double contention(int busy, int cores, std::int64_t batch) const override;
    // The optimizer's update on `busy` devices at once against one alone (beyond the
    // proportional share), measured once per count with the net's weights.
    double update_contention(int busy, int cores, std::int64_t batch) const override;
    // Measured: the in-process communicator's all-reduce at two sizes for each rank count and
    // algorithm (once each), as latency + bytes x time per byte.
    double cpu_all_reduce_ms(std::size_t bytes, int ranks,
                             ReduceAlgorithm algorithm) const override;
    // How many profiles were taken (each distinct thread count and batch once).
    std::size_t profiles_taken() const;

    // The machine figures measured so far, to print beside a plan: whoever reads a prediction
    // can see what it rests on.
    struct Calibration {
        struct Profile {
            int threads = 0;
            std::int64_t batch = 0;
            double step_ms = 0;
        };
        struct Contention {
            int cores = 0;
            std::int64_t batch = 0;
            double all = 1;  // a step with every core busy
            // Twice as many busy as cores, beyond the proportional share; 0 when no plan asked.
            double over = 0;
        };
        struct Update {
            int busy = 0;         // devices updating at once
            double slowdown = 1;  // against one alone, beyond the proportional share
        };
        struct AllReduce {
            int ranks = 0;
            ReduceAlgorithm algorithm = ReduceAlgorithm::ring;
            double latency_ms = 0, ms_per_mb = 0;
        };
        MachineFigures machine;
        std::size_t cache_bytes = 0;  // the last-level cache
        std::string cache_file;       // where the figures are kept between runs ("": nowhere)
        // Figures read from it (measured by an earlier run, at `cached_at`) rather than now.
        std::size_t reused = 0;
        std::string cached_at;
        std::vector<Profile> profiles;
        std::vector<Contention> contention;
        std::vector<AllReduce> all_reduce;
        std::vector<Update> updates;
    };
    Calibration calibration() const;

private:
    const NetProfile& profile(const TopologyDevice& device, std::int64_t batch) const;
    // The net's profile on a device of `threads` threads, measured once.
    const NetProfile& profile_at(int threads, std::int64_t batch) const;

    NetShapes shapes_;
    bool momentum_;
    Profiler profiler_;
    MachineFigures machine_;
    int rounds_;
    std::size_t cache_bytes_ = 0;
    mutable std::mutex mutex_;
    std::shared_ptr<const MeasurementCache> cache_;
    // Everything measured or read so far; `reused_` of its figures came from the cache.
    mutable Measurements measured_;
    std::size_t reused_ = 0;
    // Keeps measured_ in the cache (under mutex_), after each new figure.
    void keep() const;
    using Slowdowns = Measurements::Slowdowns;
    // The figures for (cores, batch), measuring what is missing (`over` only when asked).
    Slowdowns slowdowns(int cores, std::int64_t batch, bool over) const;
    // The median over three trials of a step on n one-thread devices at once against the
    // one-thread profile.
    double measured_slowdown(int n, std::int64_t batch) const;
};

// A measured cost model of `net` on samples of `sample`: each profile is taken on a copy of
// the net, on a CPU device of its own with the thread count asked for (the caller's net and
// devices stay as they are), with `options` (layout, seed, warm-up, iterations, quantile);
// `rounds` as MeasuredCostModel's. Measures this machine's figures now (a few milliseconds).
// With `placed` (a placement of `net`), per unit of it in its order; otherwise per top-level
// layer. With `cache` (reuse or refresh), figures are kept in this machine's cache folder
// (measurement_cache.h) under a key naming the net, the sample, the placement's units, the
// options, the rounds, the CPU and the build; with reuse, read from there by later runs.
std::shared_ptr<MeasuredCostModel> measured_cost_model(
    std::shared_ptr<Sequential> net, const Shape& sample, bool momentum,
    const ProfileOptions& options, int rounds,
    std::shared_ptr<const UnitPlacement> placed = nullptr, CacheUse cache = CacheUse::none);

// What a measured cost model's figures of `net` (whose units' shapes are `shapes`) depend on,
// as the cache's key: the build, the CPU, the options, the sample, the units and every layer.
std::string measurement_key(Sequential& net, const NetShapes& shapes, bool momentum,
                            const ProfileOptions& options, int rounds);

}  // namespace tandem

#include "plan/measured_costs.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

#include "base/cache_dir.h"
#include "base/error.h"
#include "base/format.h"
#include "device/cpu/cpu_device.h"
#include "device/cpu/cpu_peak.h"
#include "layers/cross_entropy.h"

namespace tandem {

MeasuredCostModel::MeasuredCostModel(NetShapes shapes, bool momentum, Profiler profiler,
                                     MachineProbe machine, int rounds,
                                     std::shared_ptr<const MeasurementCache> cache)
    : shapes_(std::move(shapes)), momentum_(momentum), profiler_(std::move(profiler)),
      rounds_(rounds), cache_(std::move(cache)) {
    TANDEM_CHECK_AS(ConfigError, rounds_ >= 1)
        << "profiling needs at least 1 round, got " << rounds_;
    if (cache_) {
        measured_ = cache_->load();
        reused_ = measured_.profiles.size() + measured_.slowdowns.size() +
                  measured_.update_slowdowns.size() + measured_.all_reduce.size() +
                  (measured_.machine ? 1 : 0);
    }
    if (!measured_.machine) measured_.machine = machine();
    machine_ = *measured_.machine;
    cache_bytes_ = last_level_cache_bytes();
    TANDEM_CHECK_AS(ConfigError, machine_.copy_gbs > 0)
        << "the copy rate must be positive, got " << machine_.copy_gbs;
}

void MeasuredCostModel::keep() const {
    if (!cache_) return;
    if (measured_.measured_at.empty()) measured_.measured_at = utc_now();
    cache_->save(measured_);
}

namespace {

void check_measurable(const TopologyDevice& device) {
    TANDEM_CHECK_AS(ConfigError, device.cpu)
        << "device '" << device.name << "' is a " << device.model
        << ": only CPU devices are measured here; plan GPUs with the analytic model";
}

// Each time figure of `into` lowered to `other`'s where that is smaller (same net and batch).
void keep_fastest(NetProfile& into, const NetProfile& other) {
    into.step_ms = std::min(into.step_ms, other.step_ms);
    into.update_ms = std::min(into.update_ms, other.update_ms);
    for (std::size_t i = 0; i < into.layers.size() && i < other.layers.size(); ++i) {
        into.layers[i].forward_ms = std::min(into.layers[i].forward_ms, other.layers[i].forward_ms);
        into.layers[i].backward_ms =
            std::min(into.layers[i].backward_ms, other.layers[i].backward_ms);
    }
}

}  // namespace

void MeasuredCostModel::prefetch(const TopologyDevice& device,
                                 std::vector<std::int64_t> batches) const {
    check_measurable(device);
    std::lock_guard lock(mutex_);
    std::sort(batches.begin(), batches.end());
    batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
    std::erase_if(batches, [&](std::int64_t b) {
        return measured_.profiles.count({device.threads, b}) > 0;
    });
    if (batches.empty()) return;
    std::vector<NetProfile> fastest(batches.size());
    for (int round = 0; round < rounds_; ++round)
        for (std::size_t i = 0; i < batches.size(); ++i) {
            NetProfile p = profiler_(device.threads, batches[i], nullptr);
            if (round == 0)
                fastest[i] = std::move(p);
            else
                keep_fastest(fastest[i], p);
        }
    for (std::size_t i = 0; i < batches.size(); ++i)
        measured_.profiles.emplace(std::make_pair(device.threads, batches[i]),
                                   std::move(fastest[i]));
    keep();
}

const NetProfile& MeasuredCostModel::profile(const TopologyDevice& device,
                                             std::int64_t batch) const {
    check_measurable(device);
    return profile_at(device.threads, batch);
}

const NetProfile& MeasuredCostModel::profile_at(int threads, std::int64_t batch) const {
    std::lock_guard lock(mutex_);
    const auto key = std::make_pair(threads, batch);
    auto it = measured_.profiles.find(key);
    if (it == measured_.profiles.end()) {
        it = measured_.profiles.emplace(key, profiler_(threads, batch, nullptr)).first;
        keep();
    }
    return it->second;
}

std::vector<LayerCost> MeasuredCostModel::layer_costs(const TopologyDevice& device,
                                                      std::int64_t batch) const {
    return tandem::layer_costs(profile(device, batch), momentum_ ? 1 : 0);
}

double MeasuredCostModel::loss_ms(const TopologyDevice& device, std::int64_t batch) const {
    // What the whole step measured beyond its layers and update: the loss and the step's own
    // bookkeeping.
    const NetProfile& p = profile(device, batch);
    double layers = 0;
    for (const auto& l : p.layers) layers += l.forward_ms + l.backward_ms;
    return std::max(0.0, p.step_ms - layers - p.update_ms);
}

double MeasuredCostModel::update_ms(const TopologyDevice& device, std::int64_t batch,
                                    std::size_t parameter_bytes,
                                    std::size_t /*parameter_tensors*/) const {
    // As the profile of that micro-batch measured it: its backward leaves the weights,
    // gradients and momentum out of the caches in proportion to the activations (smallbn's
    // update, 3.3 MB of weights: 0.10 ms after a backward of 1 sample, 0.32 after one of 32).
    // Its per-tensor costs are in the measured time, shared out by bytes.
    const NetProfile& p = profile(device, batch);
    const std::size_t total = shapes_.parameter_bytes();
    return total == 0
               ? 0
               : p.update_ms * static_cast<double>(parameter_bytes) / static_cast<double>(total);
}

namespace {

// Between 1 (one busy) and `all` (every core busy), linearly; beyond the cores, from `all` up
// to `over` at twice as many busy threads.
double slowdown(int busy, int cores, double all, double over) {
    if (busy <= 1 || cores <= 1) return 1;
    if (busy > cores) {
        const double f = std::min(1.0, static_cast<double>(busy - cores) / cores);
        return all + (std::max(all, over) - all) * f;
    }
    return 1 + (all - 1) * static_cast<double>(busy - 1) / static_cast<double>(cores - 1);
}

}  // namespace

double MeasuredCostModel::measured_slowdown(int n, std::int64_t batch) const {
    // The net's step on n threads at once against the one-thread profile the simulator prices
    // ops from, so that the profile times this factor is the step measured on n threads. The
    // threads pass a barrier after every step, as the engine's workers do, so a step lasts as
    // long as its slowest thread's, timed from one release of the barrier to the next
    // (ProfileOptions::after_step). Larger batches leave the caches sooner and share memory
    // bandwidth: measured at the batch asked for. The median of three trials counts. (A step
    // timed alone beside each trial, as before, varied by up to 15% between trials a second
    // apart where the n threads' step varied by 4%, and put its noise into every crowded
    // plan's prediction: docs/planner.md.)
    auto concurrent = [&] {
        std::chrono::steady_clock::time_point released;
        std::barrier steps(n, [&]() noexcept { released = std::chrono::steady_clock::now(); });
        std::vector<double> times(static_cast<std::size_t>(n));
        std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
        std::vector<std::thread> threads;
        for (int c = 0; c < n; ++c)
            threads.emplace_back([&, c] {
                try {
                    times[static_cast<std::size_t>(c)] = profiler_(1, batch, [&] {
                                                             steps.arrive_and_wait();
                                                             return released;
                                                         }).step_ms;
                } catch (...) {
                    // Failed inside a step: leave the barrier, so the others do not wait for it.
                    errors[static_cast<std::size_t>(c)] = std::current_exception();
                    steps.arrive_and_drop();
                }
            });
        for (auto& t : threads) t.join();
        for (const auto& e : errors)
            if (e) std::rethrow_exception(e);
        double mean = 0;
        for (double t : times) mean += t / n;
        return mean;
    };
    constexpr int trials = 3;
    const double alone = profile_at(1, batch).step_ms;
    if (alone <= 0) return 1;
    std::vector<double> ratios;
    for (int t = 0; t < trials; ++t) ratios.push_back(concurrent() / alone);
    return median_of(ratios);
}

MeasuredCostModel::Slowdowns MeasuredCostModel::slowdowns(int cores, std::int64_t batch,
                                                          bool over) const {
    const auto key = std::make_pair(cores, batch);
    std::optional<Slowdowns> known;
    {
        std::lock_guard lock(mutex_);
        if (auto it = measured_.slowdowns.find(key); it != measured_.slowdowns.end())
            known = it->second;
    }
    if (known && (!over || known->over)) return *known;
    // Measured outside the lock: profiles take seconds, and the profiler takes it too.
    Slowdowns s = known.value_or(Slowdowns{});
    if (!known) s.all = std::max(1.0, measured_slowdown(cores, batch));
    // Twice as many threads as cores, beyond the proportional share: time slicing evicts each
    // one's working set, and the threads get the cores in turns, not evenly.
    if (over) s.over = std::max(1.0, measured_slowdown(2 * cores, batch) / 2);
    std::lock_guard lock(mutex_);
    measured_.slowdowns[key] = s;
    keep();
    return s;
}

double MeasuredCostModel::contention(int busy, int cores, std::int64_t batch) const {
    if (busy <= 1 || cores <= 1) return 1;
    const Slowdowns s = slowdowns(cores, batch, busy > cores);
    return slowdown(busy, cores, s.all, s.over.value_or(s.all));
}

double MeasuredCostModel::update_contention(int busy, int cores, std::int64_t) const {
    if (busy <= 1 || cores <= 1) return 1;
    std::lock_guard lock(mutex_);
    auto it = measured_.update_slowdowns.find(busy);
    if (it == measured_.update_slowdowns.end()) {
        // Beyond the cores, what time slicing costs on top of the proportional share (which
        // the simulator applies itself).
        const double share = std::max(1.0, static_cast<double>(busy) / cores);
        const double measured = measure_update_slowdown(shapes_.parameter_bytes(), busy, momentum_);
        it = measured_.update_slowdowns.emplace(busy, std::max(1.0, measured / share)).first;
        keep();
    }
    return it->second;
}

double MeasuredCostModel::cpu_all_reduce_ms(std::size_t bytes, int ranks,
                                            ReduceAlgorithm algorithm) const {
    if (ranks < 2) return 0;
    const auto key = std::make_pair(ranks, algorithm);
    std::lock_guard lock(mutex_);
    auto it = measured_.all_reduce.find(key);
    if (it == measured_.all_reduce.end()) {
        // Two sizes a bucket spans (a small one is mostly the steps' hand-offs, a large one the
        // memory traffic): a line through them.
        constexpr std::size_t small = std::size_t(64) << 10, large = std::size_t(8) << 20;
        const double t_small = measure_all_reduce_ms(small, ranks, algorithm);
        const double t_large = measure_all_reduce_ms(large, ranks, algorithm);
        const double per_byte =
            std::max(0.0, (t_large - t_small) / static_cast<double>(large - small));
        const double latency = std::max(0.0, t_small - per_byte * static_cast<double>(small));
        it =
            measured_.all_reduce.emplace(key, Measurements::AllReduceLine{latency, per_byte}).first;
        keep();
    }
    return it->second.latency_ms + it->second.ms_per_byte * static_cast<double>(bytes);
}

std::size_t MeasuredCostModel::profiles_taken() const {
    std::lock_guard lock(mutex_);
    return measured_.profiles.size();
}

MeasuredCostModel::Calibration MeasuredCostModel::calibration() const {
    std::lock_guard lock(mutex_);
    Calibration c;
    c.machine = machine_;
    c.cache_bytes = cache_bytes_;
    c.cache_file = cache_ ? cache_->file().string() : std::string();
    c.reused = reused_;
    if (reused_ > 0) c.cached_at = measured_.measured_at;  // the kept figures' first
    for (const auto& [key, profile] : measured_.profiles)
        c.profiles.push_back({key.first, key.second, profile.step_ms});
    for (const auto& [key, d] : measured_.slowdowns)
        c.contention.push_back(
            {key.first, key.second, d.all, d.over ? std::max(d.all, *d.over) : 0.0});
    for (const auto& [busy, slowdown] : measured_.update_slowdowns)
        c.updates.push_back({busy, slowdown});
    for (const auto& [key, line] : measured_.all_reduce)
        c.all_reduce.push_back({key.first, key.second, line.latency_ms, line.ms_per_byte * 1e6});
    return c;
}

namespace {

// One line per layer, nested ones indented: what each is and does, its kernel choice and what
// it computes in.
void describe(Layer& layer, int depth, std::string& out) {
    out += std::string(static_cast<std::size_t>(2 * depth), ' ') + layer.name() + " " +
           std::string(layer.kind()) + " (" + layer.options_text() + ")";
    if (!layer.kernel_impl().empty()) out += " kernel " + layer.kernel_impl();
    if (layer.precision() != Precision::fp32)
        out += " precision " + std::string(precision_name(layer.precision()));
    out += "\n";
    for (Layer* child : layer.children()) describe(*child, depth + 1, out);
}

}  // namespace

std::string measurement_key(Sequential& net, const NetShapes& shapes, bool momentum,
                            const ProfileOptions& options, int rounds) {
    char settings[200];
    std::snprintf(settings, sizeof settings,
                  "layout %s, seed %llu, warm-up %d, iterations %d, quantile %.3f, rounds %d, "
                  "momentum %s\n",
                  std::string(layout_name(options.layout)).c_str(),
                  static_cast<unsigned long long>(options.seed), options.warmup, options.iterations,
                  options.quantile, rounds, momentum ? "yes" : "no");
    std::string key = "build: " + build_identity() + "\ncpu: " + cpu_identity() + "\n" + settings +
                      "sample: " + shapes.sample.to_string() + "\nunits:\n";
    for (const LayerShape& u : shapes.layers)
        key += "  " + u.name + " " + u.kind + ", in " + std::to_string(u.input_bytes) + " B, out " +
               std::to_string(u.output_bytes) + " B\n";
    key += "layers:\n";
    for (Layer* layer : net.children()) describe(*layer, 1, key);
    return key;
}

std::shared_ptr<MeasuredCostModel> measured_cost_model(std::shared_ptr<Sequential> net,
                                                       const Shape& sample, bool momentum,
                                                       const ProfileOptions& options, int rounds,
                                                       std::shared_ptr<const UnitPlacement> placed,
                                                       CacheUse cache) {
    TANDEM_CHECK_AS(ConfigError, net->size() > 0) << "the net has no layers to plan";
    if (!placed) placed = std::make_shared<const UnitPlacement>(all_units(*net));
    NetShapes shapes = net_shapes(*net, sample, *placed);
    auto profiler = [net, sample, options, placed](int threads, std::int64_t batch,
                                                   StepEnd after_step) {
        // A copy of the net on a device of its own: the caller's net and devices stay as they are.
        auto device = std::make_shared<CpuDevice>(90 + threads, CpuDeviceOptions{0, threads});
        ProfileOptions o = options;
        o.after_step = std::move(after_step);
        NetProfile p;
        {
            auto copy = std::static_pointer_cast<Sequential>(net->clone());
            CrossEntropy loss;
            p = profile_net(*copy, *placed, loss, *device, sample, batch, o);
        }
        return p;
    };
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::shared_ptr<const MeasurementCache> kept;
    if (cache != CacheUse::none)
        kept = std::make_shared<const MeasurementCache>(
            measurement_key(*net, shapes, momentum, options, rounds), cache);
    return std::make_shared<MeasuredCostModel>(
        std::move(shapes), momentum, profiler, [cores] { return measure_machine_figures(cores); },
        rounds, std::move(kept));
}

}  // namespace tandem

#include "plan/cost_model.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <ctime>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <thread>

#include "base/error.h"
#include "device/cpu/cpu_device.h"
#include "optim/sgd.h"
#include "layers/kernel_cache.h"

namespace tandem {
namespace {

// This thread's CPU time: time spent descheduled does not count.
double thread_cpu_ms() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

// The middle of a few measurements (the upper of the two middles for an even count); 0 for none.
double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int leaf_count(Layer& layer) {
    const auto children = layer.children();
    if (children.empty()) return 1;
    int n = 0;
    for (Layer* child : children) n += leaf_count(*child);
    return n;
}

Shape with_batch(const Shape& sample, std::int64_t batch) {
    std::vector<std::int64_t> dims{batch};
    dims.insert(dims.end(), sample.dims().begin(), sample.dims().end());
    return Shape(dims);
}

std::size_t numel_bytes(const Shape& shape) { return static_cast<std::size_t>(shape.numel()) * sizeof(float); }

// A device's attained rates, per millisecond.
double flops_per_ms(const DeviceModel& m) { return m.fp32_tflops * m.compute_fraction * 1e9; }
double bytes_per_ms(const DeviceModel& m) { return m.bandwidth_gbs * m.bandwidth_fraction * 1e6; }

}  // namespace

std::size_t NetShapes::parameter_bytes() const {
    std::size_t total = 0;
    for (const auto& l : layers) total += l.parameter_bytes;
    return total;
}

double NetShapes::forward_flops() const {
    double total = 0;
    for (const auto& l : layers) total += l.forward_flops;
    return total;
}

NetShapes net_shapes(Sequential& net, const Shape& sample) {
    NetShapes shapes;
    shapes.sample = sample;
    Shape in = with_batch(sample, 1);
    const auto outs = net.output_shapes(in);
    for (std::size_t i = 0; i < net.size(); ++i) {
        Layer& layer = net.at(i);
        const MemoryEstimate m = layer.memory_estimate(in);
        LayerShape l;
        l.name = layer.name();
        l.kind = std::string(layer.kind());
        l.forward_flops = layer.forward_flops(in);
        l.parameter_bytes = m.parameter_bytes;
        l.parameter_tensor_bytes = parameter_tensor_bytes(layer);
        l.input_bytes = numel_bytes(in);
        l.output_bytes = m.output_bytes;
        l.saved_bytes = m.saved_bytes;
        l.kernels = leaf_count(layer);
        shapes.layers.push_back(std::move(l));
        in = outs[i];
    }
    TANDEM_CHECK_AS(ConfigError, !outs.empty()) << "the net has no layers to plan";
    shapes.classes = outs.back().numel();
    return shapes;
}

// ---- analytic

AnalyticCostModel::AnalyticCostModel(NetShapes shapes, bool momentum)
    : shapes_(std::move(shapes)), momentum_(momentum) {}

std::vector<LayerCost> AnalyticCostModel::layer_costs(const TopologyDevice& device, std::int64_t batch) const {
    const DeviceModel& m = device_model(device.model);
    const auto b = static_cast<double>(batch);
    std::vector<LayerCost> costs;
    for (std::size_t i = 0; i < shapes_.layers.size(); ++i) {
        const LayerShape& l = shapes_.layers[i];
        const auto scale = static_cast<std::size_t>(batch);
        // Forward reads the input and weights and writes the output (and what it saves);
        // backward reads the gradient, the input and what was saved and writes the input's
        // gradient and the weights' gradient.
        const double moved = static_cast<double>(l.input_bytes + l.output_bytes + l.saved_bytes) * b +
                             static_cast<double>(l.parameter_bytes);
        const double forward = std::max(l.forward_flops * b / flops_per_ms(m), moved / bytes_per_ms(m));
        const bool input_gradient = i > 0;
        const double backward_flops = l.forward_flops * b * (input_gradient ? 2.0 : 1.0);
        const double backward = std::max(backward_flops / flops_per_ms(m), 2 * moved / bytes_per_ms(m));
        LayerCost c;
        c.name = l.name;
        c.forward_ms = forward + l.kernels * m.launch_us / 1e3;
        c.backward_ms = backward + 2 * l.kernels * m.launch_us / 1e3;
        c.parameter_bytes = l.parameter_bytes;
        c.parameter_tensor_bytes = l.parameter_tensor_bytes;
        c.optimizer_bytes = momentum_ ? l.parameter_bytes : 0;
        c.input_bytes = l.input_bytes * scale;
        c.saved_bytes = l.saved_bytes * scale;
        c.output_bytes = l.output_bytes * scale;
        // Backward holds the output's gradient and writes the input's.
        c.workspace_bytes = (l.input_bytes + l.output_bytes) * scale;
        costs.push_back(std::move(c));
    }
    return costs;
}

double AnalyticCostModel::loss_ms(const TopologyDevice& device, std::int64_t batch) const {
    const DeviceModel& m = device_model(device.model);
    // Softmax and cross-entropy forward, its gradient: three passes over the logits.
    const double bytes = 3.0 * static_cast<double>(batch * shapes_.classes) * sizeof(float);
    return bytes / bytes_per_ms(m) + 2 * m.launch_us / 1e3;
}

double AnalyticCostModel::update_ms(const TopologyDevice& device, std::size_t parameter_bytes) const {
    const DeviceModel& m = device_model(device.model);
    // SGD reads weight and gradient (and momentum) and writes the weight (and momentum).
    const double passes = momentum_ ? 5.0 : 3.0;
    return passes * static_cast<double>(parameter_bytes) / bytes_per_ms(m) + m.launch_us / 1e3;
}

double CostModel::cpu_all_reduce_ms(std::size_t bytes, int ranks, ReduceAlgorithm algorithm) const {
    const double rate = copy_gbs() * 1e6;
    const double n = ranks;
    if (rate <= 0 || ranks < 2) return 0;
    if (algorithm == ReduceAlgorithm::ring)
        return 2 * (n - 1) * (1.5 * static_cast<double>(bytes) / n / rate + handoff_ms());
    const double levels = std::ceil(std::log2(n));
    return 2 * levels * (1.5 * static_cast<double>(bytes) / rate + handoff_ms());
}

// ---- measured

MeasuredCostModel::MeasuredCostModel(NetShapes shapes, bool momentum, Profiler profiler, MachineFigures machine,
                                     int rounds)
    : shapes_(std::move(shapes)), momentum_(momentum), profiler_(std::move(profiler)), machine_(machine),
      rounds_(rounds) {
    TANDEM_CHECK_AS(ConfigError, machine_.copy_gbs > 0) << "the copy rate must be positive, got " << machine_.copy_gbs;
    TANDEM_CHECK_AS(ConfigError, rounds_ >= 1) << "profiling needs at least 1 round, got " << rounds_;
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
        into.layers[i].backward_ms = std::min(into.layers[i].backward_ms, other.layers[i].backward_ms);
    }
}

}  // namespace

void MeasuredCostModel::prefetch(const TopologyDevice& device, std::vector<std::int64_t> batches) const {
    check_measurable(device);
    std::lock_guard lock(mutex_);
    std::sort(batches.begin(), batches.end());
    batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
    std::erase_if(batches, [&](std::int64_t b) { return cache_.count({device.threads, b}) > 0; });
    std::vector<NetProfile> fastest(batches.size());
    for (int round = 0; round < rounds_; ++round)
        for (std::size_t i = 0; i < batches.size(); ++i) {
            NetProfile p = profiler_(device.threads, batches[i], nullptr);
            if (round == 0) fastest[i] = std::move(p);
            else keep_fastest(fastest[i], p);
        }
    for (std::size_t i = 0; i < batches.size(); ++i)
        cache_.emplace(std::make_pair(device.threads, batches[i]), std::move(fastest[i]));
}

const NetProfile& MeasuredCostModel::profile(const TopologyDevice& device, std::int64_t batch) const {
    check_measurable(device);
    std::lock_guard lock(mutex_);
    const auto key = std::make_pair(device.threads, batch);
    auto it = cache_.find(key);
    if (it == cache_.end()) it = cache_.emplace(key, profiler_(device.threads, batch, nullptr)).first;
    return it->second;
}

std::vector<LayerCost> MeasuredCostModel::layer_costs(const TopologyDevice& device, std::int64_t batch) const {
    return tandem::layer_costs(profile(device, batch), momentum_);
}

double MeasuredCostModel::loss_ms(const TopologyDevice& device, std::int64_t batch) const {
    // What the whole step measured beyond its layers and update: the loss and the step's own
    // bookkeeping.
    const NetProfile& p = profile(device, batch);
    double layers = 0;
    for (const auto& l : p.layers) layers += l.forward_ms + l.backward_ms;
    return std::max(0.0, p.step_ms - layers - p.update_ms);
}

double MeasuredCostModel::update_ms(const TopologyDevice& device, std::size_t parameter_bytes) const {
    // The update does not depend on the batch: one profile's, the same whatever else is cached.
    const NetProfile& p = profile(device, 1);
    const std::size_t total = shapes_.parameter_bytes();
    return total == 0 ? 0 : p.update_ms * static_cast<double>(parameter_bytes) / static_cast<double>(total);
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

const MeasuredCostModel::Slowdowns& MeasuredCostModel::slowdowns(int cores, std::int64_t batch) const {
    const auto key = std::make_pair(cores, batch);
    {
        std::lock_guard lock(mutex_);
        if (auto it = slowdowns_.find(key); it != slowdowns_.end()) return it->second;
    }
    // The net's step alone and on every core at once (and on twice as many threads as cores:
    // beyond the proportional share, time slicing evicts each one's working set, and the
    // threads get the cores in turns, not evenly). The threads pass a barrier after every step,
    // as the engine's workers do, so a step lasts as long as its slowest thread's. Larger
    // batches leave the caches sooner and share memory bandwidth: measured at the batch asked
    // for. Other work on the machine comes and goes within seconds: each trial takes its own
    // `alone` right before, and the median of three trials counts.
    auto concurrent = [&](int n) {
        std::barrier steps(n);
        std::vector<double> times(static_cast<std::size_t>(n));
        std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
        std::vector<std::thread> threads;
        for (int c = 0; c < n; ++c)
            threads.emplace_back([&, c] {
                try {
                    times[static_cast<std::size_t>(c)] = profiler_(1, batch, [&] { steps.arrive_and_wait(); }).step_ms;
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
    std::vector<double> all, over;
    for (int t = 0; t < trials; ++t) {
        const double alone = profiler_(1, batch, nullptr).step_ms;
        if (alone <= 0) break;
        all.push_back(std::max(1.0, concurrent(cores) / alone));
        over.push_back(std::max(1.0, concurrent(2 * cores) / (2 * alone)));
    }
    Slowdowns s;
    if (!all.empty()) s.all = median_of(all), s.over = median_of(over);
    std::lock_guard lock(mutex_);
    return slowdowns_.emplace(key, s).first->second;
}

double MeasuredCostModel::contention(int busy, int cores, std::int64_t batch) const {
    if (busy <= 1 || cores <= 1) return 1;
    const Slowdowns& s = slowdowns(cores, batch);
    return slowdown(busy, cores, s.all, s.over);
}

double MeasuredCostModel::update_contention(int busy, int cores, std::int64_t) const {
    if (busy <= 1 || cores <= 1) return 1;
    std::lock_guard lock(mutex_);
    auto it = update_slowdowns_.find(busy);
    if (it == update_slowdowns_.end()) {
        // Beyond the cores, what time slicing costs on top of the proportional share (which
        // the simulator applies itself).
        const double share = std::max(1.0, static_cast<double>(busy) / cores);
        const double measured = measure_update_slowdown(shapes_.parameter_bytes(), busy, momentum_);
        it = update_slowdowns_.emplace(busy, std::max(1.0, measured / share)).first;
    }
    return it->second;
}

double MeasuredCostModel::cpu_all_reduce_ms(std::size_t bytes, int ranks, ReduceAlgorithm algorithm) const {
    if (ranks < 2) return 0;
    const auto key = std::make_pair(ranks, algorithm);
    std::lock_guard lock(mutex_);
    auto it = all_reduce_.find(key);
    if (it == all_reduce_.end()) {
        // Two sizes a bucket spans (a small one is mostly the steps' hand-offs, a large one the
        // memory traffic): a line through them.
        constexpr std::size_t small = std::size_t(64) << 10, large = std::size_t(8) << 20;
        const double t_small = measure_all_reduce_ms(small, ranks, algorithm);
        const double t_large = measure_all_reduce_ms(large, ranks, algorithm);
        const double per_byte = std::max(0.0, (t_large - t_small) / static_cast<double>(large - small));
        const double latency = std::max(0.0, t_small - per_byte * static_cast<double>(small));
        it = all_reduce_.emplace(key, std::make_pair(latency, per_byte)).first;
    }
    return it->second.first + it->second.second * static_cast<double>(bytes);
}

std::size_t MeasuredCostModel::profiles_taken() const {
    std::lock_guard lock(mutex_);
    return cache_.size();
}

MeasuredCostModel::Calibration MeasuredCostModel::calibration() const {
    std::lock_guard lock(mutex_);
    Calibration c;
    c.machine = machine_;
    for (const auto& [key, profile] : cache_) c.profiles.push_back({key.first, key.second, profile.step_ms});
    for (const auto& [key, d] : slowdowns_)
        c.contention.push_back({key.first, key.second, d.all, std::max(d.all, d.over)});
    for (const auto& [busy, slowdown] : update_slowdowns_) c.updates.push_back({busy, slowdown});
    for (const auto& [key, line] : all_reduce_)
        c.all_reduce.push_back({key.first, key.second, line.first, line.second * 1e6});
    return c;
}

double measure_copy_gbs() {
    constexpr std::size_t bytes = std::size_t(32) << 20;
    std::vector<char> a(bytes, 1), b(bytes, 0);
    std::vector<double> rates;
    for (int i = 0; i < 5; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        std::memcpy(b.data(), a.data(), bytes);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        rates.push_back(static_cast<double>(bytes) / s / 1e9);
        std::swap(a, b);
    }
    return median_of(rates);
}

double measure_handoff_ms(int busy_cores) {
    // Two threads pass a token back and forth through a mutex and condition variable, as the
    // engine's step board hands tensors between workers; optionally while other threads spin.
    std::atomic<bool> stop{false};
    std::vector<std::thread> spinners;
    for (int i = 0; i < busy_cores; ++i)
        spinners.emplace_back([&] {
            while (!stop.load(std::memory_order_relaxed)) {
            }
        });
    const int rounds = busy_cores > 0 ? 40 : 200;
    std::mutex mutex;
    std::condition_variable changed;
    int token = 0;
    std::thread other([&] {
        for (int i = 0; i < rounds; ++i) {
            std::unique_lock lock(mutex);
            changed.wait(lock, [&] { return token % 2 == 1; });
            ++token;
            changed.notify_all();
        }
    });
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < rounds; ++i) {
        std::unique_lock lock(mutex);
        ++token;
        changed.notify_all();
        changed.wait(lock, [&] { return token % 2 == 0; });
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    other.join();
    stop = true;
    for (auto& t : spinners) t.join();
    return ms / (2.0 * rounds);
}

double measure_crowded_handoff_ms(int cores) {
    // `cores` x 2 pairs: in each, the token's holder works `work_ms` of CPU time (on its own
    // CPU clock: time spent descheduled is no work done), then hands the token over; the
    // receiver notes how long after the hand-off it got to run.
    constexpr int rounds = 40;
    constexpr double work_ms = 1.0;
    const int pairs = 2 * std::max(1, cores);
    using Clock = std::chrono::steady_clock;
    struct Pair {
        std::mutex mutex;
        std::condition_variable changed;
        int token = 0;
        Clock::time_point handed;
    };
    std::vector<Pair> state(static_cast<std::size_t>(pairs));
    std::vector<std::vector<double>> waits(static_cast<std::size_t>(2 * pairs));
    std::vector<std::thread> threads;
    for (int p = 0; p < pairs; ++p)
        for (int side = 0; side < 2; ++side)
            threads.emplace_back([&, p, side] {
                Pair& pair = state[static_cast<std::size_t>(p)];
                auto& mine = waits[static_cast<std::size_t>(2 * p + side)];
                for (int i = 0; i < rounds / 2; ++i) {
                    Clock::time_point handed;
                    bool first = false;
                    {
                        std::unique_lock lock(pair.mutex);
                        pair.changed.wait(lock, [&] { return pair.token % 2 == side; });
                        handed = pair.handed, first = pair.token == 0;
                    }
                    if (!first) mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - handed).count());
                    const double until = thread_cpu_ms() + work_ms;
                    while (thread_cpu_ms() < until) {
                    }
                    {
                        std::lock_guard lock(pair.mutex);
                        ++pair.token;
                        pair.handed = Clock::now();
                    }
                    pair.changed.notify_all();
                }
            });
    for (auto& t : threads) t.join();
    double sum = 0;
    std::size_t count = 0;
    for (const auto& w : waits)
        for (double ms : w) sum += ms, ++count;
    return count == 0 ? 0 : sum / static_cast<double>(count);
}

MachineFigures measure_machine_figures(int cores) {
    MachineFigures m;
    m.copy_gbs = measure_copy_gbs();
    m.handoff_ms = measure_handoff_ms();
    m.busy_handoff_ms = measure_handoff_ms(cores);
    m.crowded_handoff_ms = measure_crowded_handoff_ms(cores);
    return m;
}

double measure_all_reduce_ms(std::size_t bytes, int ranks, ReduceAlgorithm algorithm) {
    // As the engine's lanes do it: every rank on its own thread, through the in-process
    // communicator, a few times; rank 0's median call.
    constexpr int calls = 5;
    const auto comm = make_inproc_communicator(ranks);
    const std::size_t count = std::max<std::size_t>(1, bytes / sizeof(float));
    std::vector<double> times;
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
        threads.emplace_back([&, r] {
            std::vector<float> data(count, 1.0f);
            for (int i = 0; i < calls; ++i) {
                comm->barrier(r);
                const auto t0 = std::chrono::steady_clock::now();
                comm->all_reduce_sum(r, data.data(), count, algorithm);
                if (r == 0)
                    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            }
        });
    for (auto& t : threads) t.join();
    return median_of(times);
}

double measure_update_slowdown(std::size_t bytes, int threads, bool momentum) {
    // Each thread updates weights of its own on a one-thread device, all released at once by
    // a barrier, as the engine's devices are after a step; against one thread alone.
    const auto count = static_cast<std::int64_t>(std::max<std::size_t>(1, bytes / sizeof(float)));
    auto run = [&](int n) {
        constexpr int steps = 5;
        std::barrier start(n);
        std::vector<std::vector<double>> times(static_cast<std::size_t>(n));
        std::vector<std::thread> workers;
        for (int t = 0; t < n; ++t)
            workers.emplace_back([&, t] {
                CpuDevice device(80 + t, CpuDeviceOptions{0, 1});
                device.worker().run([&] {
                    Parameter p{"weight", Tensor::empty(Shape{count}, device), Tensor::empty(Shape{count}, device)};
                    tensor_ops(device).fill(p.value, 0.5f);
                    tensor_ops(device).fill(p.grad, 0.01f);
                    const std::vector<NamedParameter> params{{"weight", &p}};
                    Sgd sgd(SgdOptions{0.01f, momentum ? 0.9f : 0.f, 0.f, 0.f, false});
                    sgd.step(params, 0.01f);  // the momentum buffer, and the pages, once
                    for (int i = 0; i < steps; ++i) {
                        start.arrive_and_wait();
                        const auto t0 = std::chrono::steady_clock::now();
                        sgd.step(params, 0.01f);
                        times[static_cast<std::size_t>(t)].push_back(
                            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
                    }
                });
            });
        for (auto& w : workers) w.join();
        std::vector<double> all;
        for (const auto& v : times) all.insert(all.end(), v.begin(), v.end());
        return median_of(all);
    };
    const double alone = run(1);
    return alone > 0 ? run(threads) / alone : 1.0;
}

}  // namespace tandem

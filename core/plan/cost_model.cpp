#include "plan/cost_model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <thread>

#include "base/error.h"

namespace tandem {
namespace {

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

// ---- measured

MeasuredCostModel::MeasuredCostModel(NetShapes shapes, bool momentum, Profiler profiler, double copy_gbs,
                                     double handoff_ms, double busy_handoff_ms)
    : shapes_(std::move(shapes)), momentum_(momentum), profiler_(std::move(profiler)),
      copy_gbs_(copy_gbs), handoff_ms_(handoff_ms), busy_handoff_ms_(busy_handoff_ms) {
    TANDEM_CHECK_AS(ConfigError, copy_gbs_ > 0) << "the copy rate must be positive, got " << copy_gbs_;
}

const NetProfile& MeasuredCostModel::profile(const TopologyDevice& device, std::int64_t batch) const {
    TANDEM_CHECK_AS(ConfigError, device.cpu)
        << "device '" << device.name << "' is a " << device.model
        << ": only CPU devices are measured here; plan GPUs with the analytic model";
    std::lock_guard lock(mutex_);
    const auto key = std::make_pair(device.threads, batch);
    auto it = cache_.find(key);
    if (it == cache_.end()) it = cache_.emplace(key, profiler_(device.threads, batch)).first;
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
    const NetProfile* p = nullptr;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [key, profile] : cache_)
            if (key.first == device.threads) p = &profile;
    }
    if (!p) p = &profile(device, 1);
    const std::size_t total = shapes_.parameter_bytes();
    return total == 0 ? 0 : p->update_ms * static_cast<double>(parameter_bytes) / static_cast<double>(total);
}

double MeasuredCostModel::contention(int busy, int cores, std::int64_t batch) const {
    if (busy <= 1 || cores <= 1) return 1;
    const auto key = std::make_pair(cores, batch);
    double all = 0;
    {
        std::lock_guard lock(mutex_);
        if (auto it = contention_.find(key); it != contention_.end()) all = it->second;
    }
    if (all == 0) {
        // The net's step alone (the profile) and on every core at once. Larger batches leave
        // the caches sooner and share memory bandwidth: measured at the batch asked for.
        TopologyDevice one;
        one.cpu = true;
        const double alone = profile(one, batch).step_ms;
        auto concurrent = [&](int n) {
            std::vector<double> times(static_cast<std::size_t>(n));
            std::vector<std::thread> threads;
            for (int c = 0; c < n; ++c)
                threads.emplace_back([&, c] { times[static_cast<std::size_t>(c)] = profiler_(1, batch).step_ms; });
            for (auto& t : threads) t.join();
            double mean = 0;
            for (double t : times) mean += t / n;
            return mean;
        };
        all = alone > 0 ? std::max(1.0, concurrent(cores) / alone) : 1.0;
        // Twice as many threads as cores: beyond the proportional share, time slicing evicts
        // each one's working set.
        const double over = alone > 0 ? std::max(1.0, concurrent(2 * cores) / (2 * alone)) : 1.0;
        std::lock_guard lock(mutex_);
        contention_[key] = all;
        oversubscription_[key] = over;
    }
    if (busy > cores) {
        std::lock_guard lock(mutex_);
        // Between cores and twice as many busy threads: from `all` up to `over`.
        const double over = std::max(all, oversubscription_[key]);
        const double f = std::min(1.0, static_cast<double>(busy - cores) / cores);
        return all + (over - all) * f;
    }
    const int k = std::min(busy, cores);
    return 1 + (all - 1) * static_cast<double>(k - 1) / static_cast<double>(cores - 1);
}

std::size_t MeasuredCostModel::profiles_taken() const {
    std::lock_guard lock(mutex_);
    return cache_.size();
}

MeasuredCostModel::Calibration MeasuredCostModel::calibration() const {
    std::lock_guard lock(mutex_);
    Calibration c;
    c.copy_gbs = copy_gbs_;
    c.handoff_ms = handoff_ms_;
    c.busy_handoff_ms = busy_handoff_ms_;
    for (const auto& [key, profile] : cache_) c.profiles.push_back({key.first, key.second, profile.step_ms});
    for (const auto& [key, all] : contention_)
        c.contention.push_back({key.first, key.second, all, std::max(all, oversubscription_.at(key))});
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
    std::sort(rates.begin(), rates.end());
    return rates[rates.size() / 2];
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

}  // namespace tandem

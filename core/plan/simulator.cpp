#include "plan/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "base/error.h"
#include "plan/simulator_internal.h"

namespace tandem {
namespace simulation {

constexpr double kEpsilon = 1e-9;

int StepSimulator::signal(int direction, int group, int edge, int micro) const {
    const int edges = static_cast<int>(graph_.edges.size());
    return ((direction * plan_.groups + group) * edges + edge) * plan_.micro_batches + micro;
}

void StepSimulator::check_plan() {
    const Plan& p = plan_;
    TANDEM_CHECK_AS(ConfigError, p.groups >= 1 && p.stages >= 1 && p.micro_batches >= 1)
        << "plan " << p.label() << ": groups, stages and micro-batches must be at least 1";
    count_ = p.groups * p.stages;
    TANDEM_CHECK_AS(ConfigError, p.batch > 0 && p.batch % (p.groups * p.micro_batches) == 0)
        << "plan " << p.label() << ": a batch of " << p.batch << " does not split into " << p.groups
        << " x " << p.micro_batches << " equal micro-batches";
    if (p.devices.empty()) {
        for (int i = 0; i < count_; ++i) device_of_.push_back(i);
    } else {
        device_of_ = p.devices;
    }
    TANDEM_CHECK_AS(ConfigError, static_cast<int>(device_of_.size()) == count_)
        << "plan " << p.label() << " needs " << count_ << " devices, got " << device_of_.size();
    TANDEM_CHECK_AS(ConfigError, count_ <= topology_.device_count())
        << "plan " << p.label() << " needs " << count_ << " devices; topology '" << topology_.name()
        << "' has " << topology_.device_count();
    for (std::size_t i = 0; i < device_of_.size(); ++i) {
        (void)topology_.device(device_of_[i]);
        for (std::size_t j = 0; j < i; ++j)
            TANDEM_CHECK_AS(ConfigError, device_of_[i] != device_of_[j])
                << "plan " << p.label() << " puts two stages on device '"
                << topology_.device(device_of_[i]).name << "'";
    }
}

void StepSimulator::span(int device, const std::string& suffix, const std::string& name,
                         const std::string& category, double start, double end,
                         std::vector<TraceArg> args) {
    if (!trace_) return;
    TraceEvent e;
    e.name = name, e.category = category;
    e.track = sim_.devices[static_cast<std::size_t>(device)].name + suffix;
    e.start_us = start * 1e3, e.duration_us = (end - start) * 1e3;
    e.args = std::move(args);
    sim_.events.push_back(std::move(e));
}

void StepSimulator::set_signal(int signal, double at) {
    timed_.push(
        {at, seq_++, [this, signal] { signal_set_[static_cast<std::size_t>(signal)] = true; }});
}

double StepSimulator::reserve(int from, int to, std::size_t bytes, double at) {
    // First come, first served on each channel: the copy takes each channel of its route, in
    // turn of arrival, for its bytes at that channel's bandwidth, and lands when the last is
    // through, plus the route's latency. Holding every channel for the slowest one's time (as
    // this did before multi-ring collectives) chained unrelated copies that share one channel
    // each into a convoy through a whole step (issue 20).
    const auto route = topology_.route(device_of_[static_cast<std::size_t>(from)],
                                       device_of_[static_cast<std::size_t>(to)]);
    double end = at, latency_us = 0;
    for (int c : route) {
        const Channel& ch = topology_.channels()[static_cast<std::size_t>(c)];
        double& free = channel_free_[static_cast<std::size_t>(c)];
        free = std::max(at, free) + static_cast<double>(bytes) / (ch.bandwidth_gbs * 1e6);
        end = std::max(end, free);
        latency_us += ch.latency_us;
    }
    return end + latency_us / 1e3;
}

void StepSimulator::send(int from, int to, int signal_id, std::size_t bytes, double at) {
    if (on_cpu(from) && on_cpu(to)) {
        // The receiver copies it in its op; the signal waits for it to be woken.
        set_signal(signal_id, at + wake_up_ms(from, to));
        return;
    }
    const double end = reserve(from, to, bytes, at);
    span(to, " copy", "receive", "transfer",
         end - topology_.copy_ms(device_of_[static_cast<std::size_t>(from)],
                                 device_of_[static_cast<std::size_t>(to)], bytes),
         end, {TraceArg("bytes", bytes)});
    set_signal(signal_id, end);
}

double StepSimulator::wake_up_ms(int from, int to) const {
    const int pool = topology_.device(device_of_[static_cast<std::size_t>(to)]).pool;
    const int cores = topology_.pools()[static_cast<std::size_t>(pool)];
    int busy = 0;
    for (const auto& a : running_)
        if (a.pool == pool) busy += a.threads;
    if (busy > cores) {
        // Beyond the cores, the wait for one grows towards its measure at twice as many.
        const double crowded = std::min(1.0, double(busy - cores) / double(cores));
        return costs_.busy_handoff_ms() +
               (costs_.crowded_handoff_ms() - costs_.busy_handoff_ms()) * crowded;
    }
    const double handoff = busy == cores ? costs_.busy_handoff_ms() : costs_.handoff_ms();
    if (pool_workers_[static_cast<std::size_t>(pool)] <= cores) return handoff;
    // More workers than cores: the sender's work after this item that it can start at once
    // (its item is still current) keeps its core, and one wake-up in `cores` waits beside it.
    const auto& queue = queues_[static_cast<std::size_t>(from)];
    double ahead = 0;
    for (std::size_t k = position_[static_cast<std::size_t>(from)] + 1; k < queue.size(); ++k) {
        const Item& item = queue[k];
        if (item.kind != Item::compute ||
            (item.wait >= 0 && !signal_set_[static_cast<std::size_t>(item.wait)]))
            break;
        ahead += item.work_ms;
    }
    return handoff + std::min(costs_.crowded_handoff_ms(), ahead) / cores;
}

void StepSimulator::start_activity(Activity activity) {
    activity.started = now_;
    running_.push_back(std::move(activity));
}

void StepSimulator::start_item(int d) {
    auto& item = queues_[static_cast<std::size_t>(d)][position_[static_cast<std::size_t>(d)]];
    const TopologyDevice& device = topology_.device(device_of_[static_cast<std::size_t>(d)]);
    busy_[static_cast<std::size_t>(d)] = true;
    auto& live = live_[static_cast<std::size_t>(d)];
    live += item.hold;
    auto& sd = sim_.devices[static_cast<std::size_t>(d)];
    sd.peak_bytes =
        std::max(sd.peak_bytes, static_bytes_[static_cast<std::size_t>(d)] + live + item.transient);
    Activity a;
    a.remaining = item.work_ms;
    a.pool = device.cpu ? device.pool : -1;
    a.threads = device.threads;
    a.done = [this, d](double start, double end) { finish_item(d, start, end); };
    start_activity(std::move(a));
}

void StepSimulator::finish_item(int d, double start, double end) {
    const auto ud = static_cast<std::size_t>(d);
    Item& item = queues_[ud][position_[ud]];
    live_[ud] -= item.release;
    busy_[ud] = false;
    sim_.devices[ud].busy_ms += end - start;  // every compute op is the worker's time
    if (item.category == "backward") last_backward_ = std::max(last_backward_, end);
    if (item.opens_span) span_start_[ud] = start;
    if (item.closes_span) {
        std::vector<TraceArg> args;
        if (item.micro >= 0) args.emplace_back("micro_batch", item.micro);
        args.emplace_back("stage", sim_.devices[ud].stage);
        span(d, "", item.name, item.category, span_start_[ud], end, std::move(args));
    }
    for (const Send& out : item.sends) send(d, out.to, out.signal, out.bytes, end);
    ++position_[ud];
    if (position_[ud] == queues_[ud].size()) compute_phase_done(d);
}

void StepSimulator::start_collective(int ci) {
    Collective& c = collectives_[static_cast<std::size_t>(ci)];
    c.started = true;
    c.start = now_;
    if (plan_.parameter_server && on_cpu(c.members.front()))
        TANDEM_THROW(ConfigError) << "algorithm 'server' (a parameter server on one GPU) is a "
                                     "baseline for GPU topologies; CPU devices reduce in shared "
                                     "memory (ring or tree)";
    if (!on_cpu(c.members.front())) {
        collective_step(ci, 0);
        return;
    }
    // CPU devices reduce in shared memory, on the pool's cores: the cost model's time for the
    // collective when nothing else runs, slower while the cores are shared. The engine packs a
    // bucket's gradients into one flat buffer first and copies the sum back out after
    // (GradientBuckets::all_reduce): two copies of its bytes at the copy rate.
    const int n = static_cast<int>(c.members.size());
    Activity a;
    a.remaining =
        costs_.cpu_all_reduce_ms(c.bytes, n, plan_.algorithm) + 2 * costs_.cpu_copy_ms(c.bytes);
    a.pool = topology_.device(device_of_[static_cast<std::size_t>(c.members.front())]).pool;
    a.threads = std::min(n, topology_.pools()[static_cast<std::size_t>(a.pool)]);
    if (plan_.overlap_backward) {
        // On the lanes, beside the workers.
        a.done = [this, ci](double start, double end) {
            Collective& cc = collectives_[static_cast<std::size_t>(ci)];
            cc.finished = true;
            for (int m : cc.members)
                span(m, " all-reduce", "all-reduce", "allreduce", start, end,
                     {TraceArg("bytes", cc.bytes)});
            ++lane_free_[static_cast<std::size_t>(cc.stage)];
            for (int m : cc.members) compute_phase_done(m);
        };
    } else {
        // By the workers themselves: every member busy until the last step.
        for (int m : c.members) busy_[static_cast<std::size_t>(m)] = true;
        a.done = [this, ci](double start, double end) {
            Collective& cc = collectives_[static_cast<std::size_t>(ci)];
            cc.finished = true;
            for (int m : cc.members) {
                span(m, "", "all-reduce", "allreduce", start, end, {TraceArg("bytes", cc.bytes)});
                busy_[static_cast<std::size_t>(m)] = false;
                const auto um = static_cast<std::size_t>(m);
                ++position_[um];
                if (position_[um] == queues_[um].size()) compute_phase_done(m);
            }
        };
    }
    start_activity(std::move(a));
}

void StepSimulator::compute_phase_done(int d) {
    // A device is done with the compute phase when its queue is through and, on GPUs, every
    // collective it joined has finished.
    const auto ud = static_cast<std::size_t>(d);
    if (compute_done_[ud] || position_[ud] < queues_[ud].size()) return;
    for (const auto& c : collectives_)
        if (!c.finished && std::find(c.members.begin(), c.members.end(), d) != c.members.end())
            return;
    compute_done_[ud] = true;
    if (++phase_done_ == count_) {
        all_compute_done_ = now_;
        start_updates();
    }
}

void StepSimulator::start_updates() {
    updates_left_ = count_;
    for (int d = 0; d < count_; ++d) {
        const TopologyDevice& device = topology_.device(device_of_[static_cast<std::size_t>(d)]);
        Activity a;
        const auto ud = static_cast<std::size_t>(d);
        a.remaining = costs_.update_ms(device, plan_.micro_batch(), sim_.devices[ud].memory.weights,
                                       parameter_tensors_[ud]);
        a.update = true;
        a.pool = device.cpu ? device.pool : -1;
        a.threads = device.threads;
        a.done = [this, d](double start, double end) {
            span(d, "", "optimizer", "optimizer", start, end);
            if (--updates_left_ == 0) step_end_ = end;
        };
        start_activity(std::move(a));
    }
}

void StepSimulator::start_ready() {
    bool changed = true;
    while (changed) {
        changed = false;
        for (int d = 0; d < count_; ++d) {
            const auto ud = static_cast<std::size_t>(d);
            if (busy_[ud] || position_[ud] >= queues_[ud].size()) continue;
            Item& item = queues_[ud][position_[ud]];
            if (item.kind == Item::compute) {
                if (item.wait >= 0 && !signal_set_[static_cast<std::size_t>(item.wait)]) continue;
                start_item(d);
                changed = true;
                continue;
            }
            Collective& c = collectives_[static_cast<std::size_t>(item.collective)];
            if (on_cpu(d) && !plan_.overlap_backward) {
                // Every member waits at the collective until all have arrived.
                if (c.started) continue;
                busy_[ud] = true;
                if (++c.arrived == static_cast<int>(c.members.size()))
                    start_collective(item.collective);
                changed = true;
                continue;
            }
            // The worker posts the collective to its lane (a GPU: its stream) and goes on.
            ++c.arrived;
            ++position_[ud];
            changed = true;
            if (position_[ud] == queues_[ud].size()) compute_phase_done(d);
        }
        // Posted collectives of a stage run one after another on its lane.
        for (std::size_t c = 0; c < collectives_.size(); ++c) {
            Collective& col = collectives_[c];
            const bool posted = !on_cpu(col.members.front()) || plan_.overlap_backward;
            if (col.started || !posted || col.arrived < static_cast<int>(col.members.size()))
                continue;
            int before = 0;
            for (std::size_t k = 0; k < c; ++k) before += collectives_[k].stage == col.stage;
            if (lane_free_[static_cast<std::size_t>(col.stage)] != before) continue;
            start_collective(static_cast<int>(c));
            changed = true;
        }
    }
}

Simulation StepSimulator::run() {
    check_plan();
    channel_free_.assign(topology_.channels().size(), 0.0);
    build_queues();
    position_.assign(static_cast<std::size_t>(count_), 0);
    busy_.assign(static_cast<std::size_t>(count_), false);
    live_.assign(static_cast<std::size_t>(count_), 0);
    compute_done_.assign(static_cast<std::size_t>(count_), false);
    span_start_.assign(static_cast<std::size_t>(count_), 0.0);
    signal_set_.assign(
        static_cast<std::size_t>(2 * plan_.groups * static_cast<int>(graph_.edges.size()) *
                                 plan_.micro_batches),
        false);
    lane_free_.assign(static_cast<std::size_t>(plan_.stages), 0);
    pool_workers_.assign(topology_.pools().size(), 0);
    for (int d = 0; d < count_; ++d) {
        const TopologyDevice& device = topology_.device(device_of_[static_cast<std::size_t>(d)]);
        if (device.cpu && device.pool >= 0)
            pool_workers_[static_cast<std::size_t>(device.pool)] += device.threads;
    }
    for (int d = 0; d < count_; ++d)
        compute_phase_done(d);  // an empty queue (cannot happen) is done

    const auto& pools = topology_.pools();
    while (true) {
        start_ready();
        if (running_.empty() && timed_.empty()) break;
        // Rates: a pool's cores shared in proportion when over-asked.
        std::vector<double> demand(pools.size(), 0.0);
        for (const auto& a : running_)
            if (a.pool >= 0) demand[static_cast<std::size_t>(a.pool)] += a.threads;
        auto rate = [&](const Activity& a) {
            if (a.pool < 0) return 1.0;
            const double d = demand[static_cast<std::size_t>(a.pool)];
            const int cores = pools[static_cast<std::size_t>(a.pool)];
            // Over-asked cores are shared in proportion; busy cores also slow each other down.
            const int busy = static_cast<int>(std::ceil(d - kEpsilon));
            return std::min(1.0, static_cast<double>(cores) / d) /
                   (a.update ? costs_.update_contention(busy, cores, plan_.micro_batch())
                             : costs_.contention(busy, cores, plan_.micro_batch()));
        };
        double next = std::numeric_limits<double>::infinity();
        if (!timed_.empty()) next = timed_.top().at;
        for (const auto& a : running_) next = std::min(next, now_ + a.remaining / rate(a));
        for (auto& a : running_) a.remaining -= (next - now_) * rate(a);
        for (std::size_t pool = 0; pool < pools.size(); ++pool)
            if (demand[pool] > pools[pool] + kEpsilon) {
                sim_.crowded_ms += next - now_;
                break;
            }
        now_ = next;
        // Finish activities first (their results may set signals at this instant), then timed
        // events.
        std::vector<Activity> finished;
        for (auto it = running_.begin(); it != running_.end();) {
            if (it->remaining <= kEpsilon) {
                finished.push_back(std::move(*it));
                it = running_.erase(it);
            } else {
                ++it;
            }
        }
        for (auto& a : finished) a.done(a.started, now_);
        while (!timed_.empty() && timed_.top().at <= now_ + kEpsilon) {
            auto t = timed_.top();
            timed_.pop();
            t.run();
        }
    }
    TANDEM_CHECK(updates_left_ == 0)
        << "simulation of plan " << plan_.label() << " stalled at " << now_ << " ms ("
        << phase_done_ << " of " << count_ << " devices done): a bug";

    Simulation& s = sim_;
    s.step_ms = step_end_;
    s.images_per_s = step_end_ > 0 ? static_cast<double>(plan_.batch) * 1e3 / step_end_ : 0;
    s.compute_ms = last_backward_;
    double busy = 0;
    for (const auto& d : s.devices) busy += d.busy_ms;
    s.bubble = last_backward_ > 0 ? std::max(0.0, 1 - busy / (count_ * last_backward_)) : 0;
    s.exposed_comm_ms = std::max(0.0, all_compute_done_ - last_backward_);
    s.update_ms = step_end_ - all_compute_done_;
    return s;
}

}  // namespace simulation

std::string Plan::label() const {
    std::ostringstream out;
    out << groups << "x" << stages << "x" << micro_batches;
    if (stages > 1) out << " " << pipeline_schedule_name(schedule);
    if (recompute) out << " recompute";
    if (parameter_server) out << " server";
    if (nccl_auto) out << " auto";
    return out.str();
}

ParallelOptions Plan::parallel_options() const {
    ParallelOptions o;
    o.groups = groups, o.stages = stages, o.micro_batches = micro_batches;
    o.pipeline = schedule;
    o.cuts = cuts;
    o.algorithm = algorithm;
    o.bucket_bytes = bucket_bytes;
    o.overlap_backward = overlap_backward;
    if (recompute) o.recompute = {true};
    return o;
}

bool Simulation::fits() const {
    return std::all_of(devices.begin(), devices.end(),
                       [](const SimulatedDevice& d) { return d.peak_bytes <= d.cap; });
}

std::size_t Simulation::peak_bytes() const {
    std::size_t peak = 0;
    for (const auto& d : devices) peak = std::max(peak, d.peak_bytes);
    return peak;
}

Simulation simulate(const Plan& plan, const Topology& topology, const CostModel& costs,
                    bool trace) {
    return simulation::StepSimulator(plan, topology, costs, trace).run();
}

void write_simulated_trace(const Simulation& simulation, const std::string& path) {
    Trace trace;
    for (const auto& e : simulation.events)
        trace.add(e.track, e.name, e.category, e.start_us, e.duration_us, e.args);
    trace.write(path);
}

}  // namespace tandem

// tandem_bench_pipeline: what the parallel engine's timeline says about itself, on CPU devices.
//
//   build/tandem_bench_pipeline [--batch=128] [--warmup=2] [--steps=5] [--rounds=3]
//   [--bucket_kb=512] [--json]
//
// One reference net (a 4-conv + 2-fc CNN on 3x32x32, 13 top-level layers), trained on random
// data by core/engine/engine with a Trace; every number below comes from the spans of the
// timed steps (the warm-up steps are cleared from the trace):
//
//  a. Pipeline bubble, 1 group x 2 stages x M micro-batches, M in {2, 4, 8}, GPipe and 1F1B,
//     cuts by split = 'auto' (profiled, so the stages balance). Window of a step: from the
//     first span of any stage to the end of the last backward span. Idle fraction of a stage:
//     1 - (time inside its forward, backward and transfer spans) / window. Waiting for a
//     neighbour's activation or gradient is outside every span, so it counts as idle.
//     Theory for equal stages and free transfers: (S-1)/(M+S-1).
//  b. Overlap of the gradient all-reduce, 2x1 and 2x2x4 (1F1B), each with buckets reduced after
//     the stage's last backward and during it (overlap_backward, on the stage's lane thread):
//     per worker, all-reduce time per step and bytes per step; "hidden (bwd, own group)": the
//     share of all-reduce span time during which a worker of the same group (the stage's own
//     included) is inside a backward span — the overlap that delayed per-stage communication and
//     in-backward buckets are for; "hidden (any compute)": the share during which any worker
//     is inside a forward or backward span. An all-reduce span also holds the wait for the slower
//     replica. Buckets of --bucket_kb (the reference net's 3 MB of gradients would fit one
//     bucket of DDP's 25 MB, leaving nothing to overlap).
//  c. Two devices of one kernel thread each (2x1 data parallel, 1x2x4 pipeline) against one
//     device of two threads, images/s. (The nets of recipes/nets/: bench/parallel.lua.)
//
// Each CpuDevice has one kernel thread unless the row says otherwise. The machine these run on
// is shared and its load moves within seconds, so every part runs its configurations in turns,
// --rounds times, and reports the median of each figure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/rng.h"
#include "device/cpu/cpu_device.h"
#include "engine/engine.h"
#include "io/trace.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/pool2d.h"
#include "layers/relu.h"

namespace {

using namespace tandem;

struct Args {
    std::int64_t batch = 128;
    int warmup = 2;
    int steps = 5;
    int rounds = 3;  // every configuration this many times, in turns; medians reported
    std::size_t bucket_kb = 512;
    bool json = false;
};

Args parse_args(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string_view s = argv[i];
        auto value = [&](std::string_view key) -> const char* {
            return s.starts_with(key) && s.size() > key.size() && s[key.size()] == '='
                       ? argv[i] + key.size() + 1
                       : nullptr;
        };
        if (const char* v = value("--batch"))
            a.batch = std::atoll(v);
        else if (const char* v = value("--warmup"))
            a.warmup = std::atoi(v);
        else if (const char* v = value("--steps"))
            a.steps = std::atoi(v);
        else if (const char* v = value("--rounds"))
            a.rounds = std::max(1, std::atoi(v));
        else if (const char* v = value("--bucket_kb"))
            a.bucket_kb = static_cast<std::size_t>(std::max(1, std::atoi(v)));
        else if (s == "--json")
            a.json = true;
        else {
            std::fprintf(stderr,
                         "usage: tandem_bench_pipeline [--batch=128] [--warmup=2] [--steps=5] "
                         "[--rounds=3] [--bucket_kb=512] [--json]\n");
            std::exit(2);
        }
    }
    return a;
}

Conv2dOptions conv(std::int64_t in, std::int64_t out) {
    Conv2dOptions c;
    c.in_channels = in, c.out_channels = out, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    return c;
}

std::shared_ptr<Sequential> reference_net() {
    Pool2dOptions p;
    p.kernel_h = p.kernel_w = 2;
    return std::make_shared<Sequential>(std::vector<LayerPtr>{
        std::make_shared<Conv2d>(conv(3, 32)), std::make_shared<ReLU>(),
        std::make_shared<MaxPool2d>(p), std::make_shared<Conv2d>(conv(32, 64)),
        std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(p),
        std::make_shared<Conv2d>(conv(64, 128)), std::make_shared<ReLU>(),
        std::make_shared<Conv2d>(conv(128, 128)), std::make_shared<ReLU>(),
        std::make_shared<MaxPool2d>(p), std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{128 * 4 * 4, 256, true, "kaiming"}),
        std::make_shared<ReLU>(),
        std::make_shared<Linear>(LinearOptions{256, 10, true, "kaiming"})});
}

// ---- intervals: the union of a track's spans, and how much of [a, b) it covers.
using Intervals = std::vector<std::pair<double, double>>;

Intervals merged(Intervals v) {
    std::sort(v.begin(), v.end());
    Intervals out;
    for (const auto& [a, b] : v) {
        if (!out.empty() && a <= out.back().second)
            out.back().second = std::max(out.back().second, b);
        else
            out.emplace_back(a, b);
    }
    return out;
}

double covered(const Intervals& u, double a, double b) {
    double t = 0;
    for (const auto& [x, y] : u) t += std::max(0.0, std::min(b, y) - std::max(a, x));
    return t;
}

bool in(const std::string& category, std::initializer_list<std::string_view> categories) {
    return std::find(categories.begin(), categories.end(), category) != categories.end();
}

Intervals spans_of(const std::vector<TraceEvent>& events, const std::string& track,
                   std::initializer_list<std::string_view> categories) {
    Intervals v;
    for (const auto& e : events)
        if (e.track == track && in(e.category, categories))
            v.emplace_back(e.start_us, e.start_us + e.duration_us);
    return merged(std::move(v));
}

std::int64_t int_arg(const TraceEvent& e, std::string_view key) {
    for (const auto& a : e.args)
        if (a.key == key && std::holds_alternative<std::int64_t>(a.value))
            return std::get<std::int64_t>(a.value);
    return 0;
}

// ---- one configuration: build, warm up, time steps, keep each timed step's spans.
struct Config {  // one G x S x M layout
    int groups = 1, stages = 1, micro_batches = 1;
    PipelineSchedule schedule = PipelineSchedule::gpipe;
    int threads = 1;      // kernel threads per device
    bool overlap = true;  // gradient buckets reduced during the last backward
};

struct Run {
    double images_per_s = 0;
    std::vector<std::vector<std::string>> tracks;  // [group][stage] device names
    // [group][stage] where its all-reduce spans are
    std::vector<std::vector<std::string>> reducers;
    std::vector<std::vector<TraceEvent>> steps;  // each timed step's spans
    std::string partition;
};

Run run(const Config& l, const Args& args) {
    EngineOptions o;
    o.net = reference_net();
    o.loss = std::make_shared<CrossEntropy>();
    for (int i = 0; i < l.groups * l.stages; ++i)
        o.devices.push_back(std::make_shared<CpuDevice>(i, CpuDeviceOptions{0, l.threads}));
    o.optimizer.sgd = SgdOptions{0.01f, 0.9f, 0.f, 5e-4f, true};
    o.layout = tandem::Layout::channels_last;
    o.parallel.groups = l.groups, o.parallel.stages = l.stages,
    o.parallel.micro_batches = l.micro_batches;
    o.parallel.pipeline = l.schedule;
    o.parallel.auto_split = l.stages > 1;
    o.parallel.overlap_backward = l.overlap;
    o.parallel.bucket_bytes = args.bucket_kb << 10;
    o.trace = std::make_shared<Trace>();
    auto trace = o.trace;
    Engine engine(std::move(o));

    const std::int64_t n = args.batch;
    std::vector<float> x(static_cast<std::size_t>(n * 3 * 32 * 32));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = rng_normal(rng_key(5, 1), i);
    const Tensor images = Tensor::from_vector({n, 3, 32, 32}, host_device(), x);
    Tensor labels = Tensor::empty({n}, host_device(), DType::i32);
    for (std::int64_t i = 0; i < n; ++i) labels.data<int>()[i] = static_cast<int>(i % 10);

    Run r;
    engine.prepare({3, 32, 32}, n);
    r.partition = engine.partition_text();
    for (int g = 0; g < l.groups; ++g) {
        r.tracks.emplace_back();
        r.reducers.emplace_back();
        for (int s = 0; s < l.stages; ++s) {
            const std::string& device = engine.stage_device(g, s).name();
            r.tracks.back().push_back(device);
            r.reducers.back().push_back(l.overlap && l.groups > 1 ? device + " all-reduce"
                                                                  : device);
        }
    }
    for (int i = 0; i < args.warmup; ++i) engine.step(images, labels);
    double seconds = 0;
    for (int i = 0; i < args.steps; ++i) {
        trace->clear();
        const double t0 = trace->now_us();
        engine.step(images, labels);
        seconds += (trace->now_us() - t0) / 1e6;
        r.steps.push_back(trace->events());
    }
    r.images_per_s = static_cast<double>(n) * args.steps / seconds;
    return r;
}

std::string name(const Config& l) {
    return std::to_string(l.groups) + "x" + std::to_string(l.stages) + "x" +
           std::to_string(l.micro_batches) + " " + std::string(pipeline_schedule_name(l.schedule)) +
           (l.groups > 1 && !l.overlap ? " after" : "");
}

// ---- a. the bubble: per stage, idle share of the step window, summed over the timed steps.
struct Bubble {
    std::vector<double> idle;     // per stage
    std::vector<double> busy_ms;  // per stage and step
    double theory = 0;
};

Bubble bubble(const Run& r, const Config& l) {
    std::vector<double> busy(static_cast<std::size_t>(l.stages), 0.0);
    double window = 0;
    for (const auto& events : r.steps) {
        double from = 1e300, to = 0;
        for (const auto& e : events) {
            from = std::min(from, e.start_us);
            if (e.category == "backward") to = std::max(to, e.start_us + e.duration_us);
        }
        window += to - from;
        for (int s = 0; s < l.stages; ++s)
            busy[static_cast<std::size_t>(s)] +=
                covered(spans_of(events, r.tracks[0][static_cast<std::size_t>(s)],
                                 {"forward", "backward", "transfer"}),
                        from, to);
    }
    Bubble b;
    for (double t : busy) {
        b.idle.push_back(1.0 - t / window);
        b.busy_ms.push_back(t / 1e3 / double(r.steps.size()));
    }
    b.theory = double(l.stages - 1) / double(l.micro_batches + l.stages - 1);
    return b;
}

// ---- b. all-reduce overlap, over every worker and timed step.
struct Overlap {
    double allreduce_ms_per_step = 0;  // per worker
    double bytes_per_step = 0;         // per worker
    double hidden_backward = 0;        // share hidden behind a backward of its own group
    double hidden_compute = 0;         // share hidden behind any worker's forward/backward
};

Overlap overlap(const Run& r, const Config& l) {
    double total = 0, bytes = 0, hid_b = 0, hid_c = 0;
    for (const auto& events : r.steps) {
        Intervals compute;  // any worker in forward or backward
        std::vector<Intervals> backward(static_cast<std::size_t>(l.groups));  // per group
        for (int g = 0; g < l.groups; ++g)
            for (const std::string& worker : r.tracks[static_cast<std::size_t>(g)]) {
                const Intervals b = spans_of(events, worker, {"backward"}),
                                c = spans_of(events, worker, {"forward", "backward"});
                backward[static_cast<std::size_t>(g)].insert(
                    backward[static_cast<std::size_t>(g)].end(), b.begin(), b.end());
                compute.insert(compute.end(), c.begin(), c.end());
            }
        compute = merged(compute);
        for (auto& b : backward) b = merged(b);
        for (int g = 0; g < l.groups; ++g)
            for (const std::string& reducer : r.reducers[static_cast<std::size_t>(g)])
                for (const auto& e : events) {
                    if (e.track != reducer || e.category != "allreduce") continue;
                    const double a = e.start_us, b = e.start_us + e.duration_us;
                    total += e.duration_us;
                    bytes += static_cast<double>(int_arg(e, "bytes"));
                    hid_b += covered(backward[static_cast<std::size_t>(g)], a, b);
                    hid_c += covered(compute, a, b);
                }
    }
    const double per = double(r.steps.size()) * l.groups * l.stages;
    Overlap o;
    o.allreduce_ms_per_step = total / per / 1e3;
    o.bytes_per_step = bytes / per;
    o.hidden_backward = total > 0 ? hid_b / total : 0;
    o.hidden_compute = total > 0 ? hid_c / total : 0;
    return o;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

template <class T, class F>
double median_of(const std::vector<T>& rounds, F field) {
    std::vector<double> v;
    for (const T& r : rounds) v.push_back(field(r));
    return median(v);
}

}  // namespace

int main(int argc, char** argv) {
    const Args args = parse_args(argc, argv);
    std::string json =
        "{\"batch\": " + std::to_string(args.batch) + ", \"steps\": " + std::to_string(args.steps);
    auto out = [&](const char* fmt, auto... v) {
        if (!args.json) std::printf(fmt, v...);
    };
    char buf[512];
    out("reference net: "
        "conv(3>32)-pool-conv(32>64)-pool-conv(64>128)-conv(128>128)-pool-fc(2048>256)-fc(256>10),"
        " 3x32x32, batch %lld, %d warm-up + %d timed steps;\nmedians of %d rounds, the "
        "configurations of each part in turns\n\n",
        static_cast<long long>(args.batch), args.warmup, args.steps, args.rounds);

    out("a. pipeline bubble, 1 x 2 x M (split = auto), idle = 1 - busy(forward+backward+transfer) "
        "/ window\n");
    out("%-14s %10s %10s %10s %10s %8s %16s %10s\n", "layout", "idle s1", "idle s2", "mean",
        "theory", "within5", "busy ms s1/s2", "images/s");
    json += ", \"bubble\": [";
    std::vector<Config> pipelines;
    for (auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
        for (int m : {2, 4, 8}) pipelines.push_back(Config{1, 2, m, schedule, 1});
    struct BubbleRound {
        Bubble bubble;
        double images_per_s;
    };
    std::vector<std::vector<BubbleRound>> bubbles(pipelines.size());
    for (int round = 0; round < args.rounds; ++round)
        for (std::size_t i = 0; i < pipelines.size(); ++i) {
            const Run r = run(pipelines[i], args);
            if (round == 0 && i == 0 && !args.json) std::printf("%s\n", r.partition.c_str());
            bubbles[i].push_back({bubble(r, pipelines[i]), r.images_per_s});
        }
    for (std::size_t i = 0; i < pipelines.size(); ++i) {
        const Config& l = pipelines[i];
        const auto& rs = bubbles[i];
        const double idle1 = median_of(rs, [](const BubbleRound& r) { return r.bubble.idle[0]; });
        const double idle2 = median_of(rs, [](const BubbleRound& r) { return r.bubble.idle[1]; });
        const double mean = median_of(
            rs, [](const BubbleRound& r) { return (r.bubble.idle[0] + r.bubble.idle[1]) / 2; });
        const double busy1 =
            median_of(rs, [](const BubbleRound& r) { return r.bubble.busy_ms[0]; });
        const double busy2 =
            median_of(rs, [](const BubbleRound& r) { return r.bubble.busy_ms[1]; });
        const double rate = median_of(rs, [](const BubbleRound& r) { return r.images_per_s; });
        const double theory = rs.front().bubble.theory;
        const bool ok = std::abs(mean - theory) <= 0.05;
        out("%-14s %9.1f%% %9.1f%% %9.1f%% %9.1f%% %8s %8.1f/%-7.1f %10.1f\n", name(l).c_str(),
            100 * idle1, 100 * idle2, 100 * mean, 100 * theory, ok ? "yes" : "no", busy1, busy2,
            rate);
        std::snprintf(
            buf, sizeof buf,
            "%s{\"layout\": \"%s\", \"idle\": [%.4f, %.4f], \"mean_idle\": %.4f, \"theory\": %.4f, "
            "\"within_5\": %s, \"images_per_s\": %.1f}",
            i == 0 ? "" : ", ", name(l).c_str(), idle1, idle2, mean, theory, ok ? "true" : "false",
            rate);
        json += buf;
    }
    json += "]";

    out("\nb. all-reduce overlap (ring, %zu KB buckets), after the last backward or during it; per "
        "worker and step.\n"
        "   hidden(bwd): share of all-reduce time while a worker of the same group is in backward; "
        "hidden(any):\n"
        "   while any worker is in forward/backward\n",
        args.bucket_kb);
    out("%-20s %12s %12s %12s %12s %10s\n", "layout", "allreduce ms", "MB/step", "hidden(bwd)",
        "hidden(any)", "images/s");
    json += ", \"overlap\": [";
    const std::vector<Config> replicated{Config{2, 1, 1, PipelineSchedule::gpipe, 1, false},
                                         Config{2, 1, 1, PipelineSchedule::gpipe, 1, true},
                                         Config{2, 2, 4, PipelineSchedule::one_f_one_b, 1, false},
                                         Config{2, 2, 4, PipelineSchedule::one_f_one_b, 1, true}};
    std::vector<std::vector<std::pair<Overlap, double>>> overlaps(replicated.size());
    for (int round = 0; round < args.rounds; ++round)
        for (std::size_t i = 0; i < replicated.size(); ++i) {
            const Run r = run(replicated[i], args);
            overlaps[i].emplace_back(overlap(r, replicated[i]), r.images_per_s);
        }
    for (std::size_t i = 0; i < replicated.size(); ++i) {
        using R = std::pair<Overlap, double>;
        const auto& rs = overlaps[i];
        Overlap o;
        o.allreduce_ms_per_step =
            median_of(rs, [](const R& r) { return r.first.allreduce_ms_per_step; });
        o.bytes_per_step = median_of(rs, [](const R& r) { return r.first.bytes_per_step; });
        o.hidden_backward = median_of(rs, [](const R& r) { return r.first.hidden_backward; });
        o.hidden_compute = median_of(rs, [](const R& r) { return r.first.hidden_compute; });
        const double rate = median_of(rs, [](const R& r) { return r.second; });
        const std::string layout = name(replicated[i]);
        out("%-20s %12.2f %12.2f %11.1f%% %11.1f%% %10.1f\n", layout.c_str(),
            o.allreduce_ms_per_step, o.bytes_per_step / 1e6, 100 * o.hidden_backward,
            100 * o.hidden_compute, rate);
        std::snprintf(
            buf, sizeof buf,
            "%s{\"layout\": \"%s\", \"allreduce_ms_per_step\": %.3f, \"bytes_per_step\": %.0f, "
            "\"hidden_backward\": %.4f, \"hidden_compute\": %.4f, \"images_per_s\": %.1f}",
            i == 0 ? "" : ", ", layout.c_str(), o.allreduce_ms_per_step, o.bytes_per_step,
            o.hidden_backward, o.hidden_compute, rate);
        json += buf;
    }
    json += "]";

    out("\nc. two 1-thread devices against one 2-thread device\n");
    out("%-26s %10s %8s\n", "configuration", "images/s", "ratio");
    json += ", \"threads\": [";
    const std::vector<std::pair<std::string, Config>> configs{
        {"1x1, 2 threads", Config{1, 1, 1, PipelineSchedule::gpipe, 2}},
        {"2x1x1, 1 thread each", Config{2, 1, 1, PipelineSchedule::gpipe, 1}},
        {"1x2x4 1f1b, 1 thread each", Config{1, 2, 4, PipelineSchedule::one_f_one_b, 1}}};
    std::vector<std::vector<double>> rates(configs.size());
    for (int round = 0; round < args.rounds; ++round)
        for (std::size_t i = 0; i < configs.size(); ++i)
            rates[i].push_back(run(configs[i].second, args).images_per_s);
    double base = 0;
    for (std::size_t i = 0; i < configs.size(); ++i) {
        const double rate = median(rates[i]);
        if (i == 0) base = rate;
        out("%-26s %10.1f %8.2f\n", configs[i].first.c_str(), rate, rate / base);
        std::snprintf(buf, sizeof buf,
                      "%s{\"configuration\": \"%s\", \"images_per_s\": %.1f, \"ratio\": %.3f}",
                      i == 0 ? "" : ", ", configs[i].first.c_str(), rate, rate / base);
        json += buf;
    }
    json += "]}";
    if (args.json) std::printf("%s\n", json.c_str());
    return 0;
}

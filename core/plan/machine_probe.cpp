#include "plan/machine_probe.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include "device/cpu/cpu_device.h"
#include "kernels/kernel_cache.h"
#include "optim/sgd.h"
#include "parallel/comm_inproc.h"

namespace tandem {
namespace {

// This thread's CPU time: time spent descheduled does not count.
double thread_cpu_ms() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

}  // namespace

double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double measure_copy_gbs() {
    constexpr std::size_t bytes = std::size_t(32) << 20;
    std::vector<char> a(bytes, 1), b(bytes, 0);
    std::vector<double> rates;
    for (int i = 0; i < 5; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        std::memcpy(b.data(), a.data(), bytes);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
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
                    if (!first)
                        mine.push_back(
                            std::chrono::duration<double, std::milli>(Clock::now() - handed)
                                .count());
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

std::size_t last_level_cache_bytes() {
    // sysfs, as lscpu reads it: a virtual machine's CPUID can report its host's whole cache.
    std::size_t best = 0;
    int best_level = 0;
    for (int index = 0; index < 16; ++index) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
        std::ifstream level_file(dir + "/level"), size_file(dir + "/size"),
            type_file(dir + "/type");
        int level = 0;
        std::string size, type;
        if (!(level_file >> level) || !(size_file >> size) || !(type_file >> type)) continue;
        if (type == "Instruction" || level < best_level || size.empty()) continue;
        std::size_t bytes = 0;
        try {
            bytes = std::stoull(size);
        } catch (const std::exception&) {
            continue;
        }
        const char unit = size.back();
        bytes <<= unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
        best = bytes, best_level = level;
    }
    return best;
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
                    times.push_back(std::chrono::duration<double, std::milli>(
                                        std::chrono::steady_clock::now() - t0)
                                        .count());
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
                    Parameter p{"weight", Tensor::empty(Shape{count}, device),
                                Tensor::empty(Shape{count}, device)};
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
                            std::chrono::duration<double, std::milli>(
                                std::chrono::steady_clock::now() - t0)
                                .count());
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

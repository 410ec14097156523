#include "device/cpu/cpu_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <thread>
#include <vector>

#include "base/atomic_file.h"
#include "base/cache_dir.h"
#include "base/format.h"
#include "base/json.h"

namespace tandem {
namespace {

// Independent accumulators per thread: more than FMA latency times FMA ports on the cores we
// meet (4-5 cycles x 2 ports), so the ports, not the latency, bound the rate.
constexpr int kChains = 12;

// Each kernel runs `rounds` rounds of kChains independent multiply-adds on whole vectors and
// returns a value that depends on all of them, so that nothing is optimised away.
__attribute__((target("avx512f"))) float chains_avx512(std::int64_t rounds) {
    __m512 acc[kChains];
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(float(k) * 1e-3f);
    const __m512 a = _mm512_set1_ps(0.9999f), b = _mm512_set1_ps(1e-4f);
    for (std::int64_t i = 0; i < rounds; ++i) {
#pragma GCC unroll 12
        for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
    }
    for (int k = 1; k < kChains; ++k) acc[0] = _mm512_add_ps(acc[0], acc[k]);
    // (Not _mm512_reduce_add_ps: GCC 12's header trips -Wuninitialized.)
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc[0]);
    float sum = 0;
    for (float v : lanes) sum += v;
    return sum;
}

__attribute__((target("avx2,fma"))) float chains_avx2(std::int64_t rounds) {
    __m256 acc[kChains];
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(float(k) * 1e-3f);
    const __m256 a = _mm256_set1_ps(0.9999f), b = _mm256_set1_ps(1e-4f);
    for (std::int64_t i = 0; i < rounds; ++i) {
#pragma GCC unroll 12
        for (int k = 0; k < kChains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
    }
    for (int k = 1; k < kChains; ++k) acc[0] = _mm256_add_ps(acc[0], acc[k]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc[0]);
    float sum = 0;
    for (float v : lanes) sum += v;
    return sum;
}

// Without FMA: a multiply and an add, two operations as an FMA is.
float chains_sse2(std::int64_t rounds) {
    __m128 acc[kChains];
    for (int k = 0; k < kChains; ++k) acc[k] = _mm_set1_ps(float(k) * 1e-3f);
    const __m128 a = _mm_set1_ps(0.9999f), b = _mm_set1_ps(1e-4f);
    for (std::int64_t i = 0; i < rounds; ++i) {
#pragma GCC unroll 12
        for (int k = 0; k < kChains; ++k) acc[k] = _mm_add_ps(_mm_mul_ps(acc[k], a), b);
    }
    for (int k = 1; k < kChains; ++k) acc[0] = _mm_add_ps(acc[0], acc[k]);
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, acc[0]);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

struct Kernel {
    const char* isa;
    double flops_per_round;
    float (*run)(std::int64_t);
};

Kernel widest_kernel() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return {"AVX-512", kChains * 16 * 2.0, chains_avx512};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return {"AVX2+FMA", kChains * 8 * 2.0, chains_avx2};
    return {"SSE2", kChains * 4 * 2.0, chains_sse2};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// `work(t)` on `threads` threads started together; the wall time from the start to the last
// one's end. The clock is read before the threads are let go: read after, a main thread that
// lost its core on a busy machine could read it once their work was done, and report a rate
// a thousand times the machine's (a cached 109,375 GFLOP/s a core, 2026-11-26).
double run_together(int threads, const std::function<void(int)>& work) {
    std::latch ready(threads), go(1);
    std::vector<std::thread> team;
    team.reserve(std::size_t(threads));
    for (int t = 0; t < threads; ++t)
        team.emplace_back([&, t] {
            ready.count_down();
            go.wait();
            work(t);
        });
    ready.wait();
    const auto start = std::chrono::steady_clock::now();
    go.count_down();
    for (auto& thread : team) thread.join();
    return seconds_since(start);
}

std::atomic<float> g_sink{0};  // keeps the kernels' results alive

// GFLOP/s of `kernel` on `threads` threads, the best of seven runs of about 20 ms each (short
// runs, so that one of them may miss whatever else the machine is doing).
double fma_rate(const Kernel& kernel, int threads, std::int64_t rounds) {
    double best = 0;
    for (int repeat = 0; repeat < 7; ++repeat) {
        const double s = run_together(
            threads, [&](int) { g_sink.store(kernel.run(rounds), std::memory_order_relaxed); });
        best = std::max(best, kernel.flops_per_round * double(rounds) * threads / s / 1e9);
    }
    return best;
}

// Rounds that take about 20 ms on one core.
std::int64_t calibrate(const Kernel& kernel) {
    std::int64_t rounds = 1 << 16;
    for (;;) {
        const auto start = std::chrono::steady_clock::now();
        g_sink.store(kernel.run(rounds), std::memory_order_relaxed);
        const double s = seconds_since(start);
        if (s > 0.01 || rounds > (std::int64_t(1) << 40))
            return std::max<std::int64_t>(1, std::int64_t(double(rounds) * 0.02 / s));
        rounds *= 8;
    }
}

// GB/s of a = b + s c on every core, counting the bytes read and written (12 per element),
// over arrays of 64 MiB each: beyond any cache of the machines we meet.
double triad_bandwidth(int threads) {
    const std::size_t n = std::size_t(16) << 20;
    std::vector<float> a(n), b(n, 1.f), c(n, 2.f);
    double best = 0;
    for (int repeat = 0; repeat < 3; ++repeat) {
        const double s = run_together(threads, [&](int t) {
            const std::size_t begin = n * std::size_t(t) / std::size_t(threads);
            const std::size_t end = n * std::size_t(t + 1) / std::size_t(threads);
            for (std::size_t i = begin; i < end; ++i) a[i] = b[i] + 0.5f * c[i];
        });
        best = std::max(best, 12.0 * double(n) / s / 1e9);
    }
    g_sink.store(a[n / 2], std::memory_order_relaxed);
    return best;
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) {
                std::string name = line.substr(colon + 1);
                name.erase(0, name.find_first_not_of(' '));
                return name;
            }
        }
    return "unknown CPU";
}

int logical_cores() {
    return int(std::max(1u, std::thread::hardware_concurrency()));
}

// One file per CPU model, ISA and core count: a machine whose CPU changed measures afresh.
std::filesystem::path peak_file(const std::string& model, const std::string& isa, int cores) {
    return cache_file("cpu-peak", model + "|" + isa + "|" + std::to_string(cores));
}

std::string to_json(const CpuPeak& p) {
    std::string out = "{\"model\": ";
    append_json_string(out, p.model);
    out += ", \"isa\": ";
    append_json_string(out, p.isa);
    char numbers[256];
    std::snprintf(numbers, sizeof numbers,
                  ", \"cores\": %d, \"gflops_one_core\": %.3f, \"gflops_all_cores\": %.3f, "
                  "\"bandwidth_gbs\": %.3f, "
                  "\"measured_at\": ",
                  p.cores, p.gflops_one_core, p.gflops_all_cores, p.bandwidth_gbs);
    out += numbers;
    append_json_string(out, p.measured_at);
    return out + "}\n";
}

// The cached measurement in `file` if it is whole and for this CPU; otherwise none.
bool read_cache(const std::filesystem::path& file, const CpuPeak& expected, CpuPeak& out) {
    try {
        const std::vector<char> bytes = read_file(file.string());
        const JsonValue root = parse_json(std::string_view(bytes.data(), bytes.size()));
        if (root.kind != JsonValue::Kind::object) return false;
        CpuPeak p;
        int found = 0;
        for (const JsonMember& m : root.object) {
            const JsonValue& v = m.value;
            const bool number =
                v.kind == JsonValue::Kind::number || v.kind == JsonValue::Kind::integer;
            if (m.key == "model" && v.kind == JsonValue::Kind::string) p.model = v.string, ++found;
            if (m.key == "isa" && v.kind == JsonValue::Kind::string) p.isa = v.string, ++found;
            if (m.key == "measured_at" && v.kind == JsonValue::Kind::string)
                p.measured_at = v.string, ++found;
            if (m.key == "cores" && v.kind == JsonValue::Kind::integer)
                p.cores = int(v.integer), ++found;
            if (m.key == "gflops_one_core" && number) p.gflops_one_core = v.number, ++found;
            if (m.key == "gflops_all_cores" && number) p.gflops_all_cores = v.number, ++found;
            if (m.key == "bandwidth_gbs" && number) p.bandwidth_gbs = v.number, ++found;
        }
        const bool whole =
            found == 7 && p.gflops_one_core > 0 && p.gflops_all_cores > 0 && p.bandwidth_gbs > 0;
        if (!whole || p.model != expected.model || p.isa != expected.isa ||
            p.cores != expected.cores)
            return false;
        p.cache_file = file.string();
        out = p;
        return true;
    } catch (const std::exception&) {
        return false;  // missing, unreadable or damaged: measure again
    }
}

}  // namespace

std::string cpu_identity() {
    return cpu_model() + ", " + widest_kernel().isa + ", " + std::to_string(logical_cores()) +
           " cores";
}

CpuPeak measure_cpu_peak() {
    const Kernel kernel = widest_kernel();
    CpuPeak p;
    p.model = cpu_model();
    p.isa = kernel.isa;
    p.cores = logical_cores();
    const std::int64_t rounds = calibrate(kernel);
    p.gflops_one_core = fma_rate(kernel, 1, rounds);
    p.gflops_all_cores = fma_rate(kernel, p.cores, rounds);
    p.bandwidth_gbs = triad_bandwidth(p.cores);
    p.measured_at = utc_now();
    return p;
}

CpuPeak cpu_peak(bool remeasure) {
    CpuPeak expected;
    expected.model = cpu_model();
    expected.isa = widest_kernel().isa;
    expected.cores = logical_cores();
    const std::filesystem::path file = peak_file(expected.model, expected.isa, expected.cores);
    CpuPeak cached;
    if (!remeasure && !file.empty() && read_cache(file, expected, cached)) return cached;
    CpuPeak p = measure_cpu_peak();
    if (!file.empty() && write_cache_file(file, to_json(p))) p.cache_file = file.string();
    return p;
}

}  // namespace tandem

// tandem_bench_allreduce: the in-process communicator's all-reduce rate, ring against tree, for
// 2 and 4 ranks from 1 MB to 64 MB, next to this machine's memcpy rate measured in the same run.
//
//   build/tandem_bench_allreduce [max_mb]
//
// algbw is bytes reduced per second (size / time, as nccl-tests report it); busbw scales it by
// 2(n-1)/n, the share of the data each rank moves in a ring, so it compares with memcpy: a
// shared-memory all-reduce is bound by memory bandwidth, and busbw near the memcpy rate means
// there is little left to gain.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "parallel/comm_inproc.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

int iterations_for(std::size_t bytes) {
    return static_cast<int>(std::clamp<std::size_t>((std::size_t(512) << 20) / bytes, 4, 200));
}

double memcpy_gbps(std::size_t bytes) {
    std::vector<char> a(bytes, 1), b(bytes, 0);
    std::memcpy(b.data(), a.data(), bytes);  // touch the pages first
    const int iters = iterations_for(bytes);
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
        std::memcpy(i % 2 ? a.data() : b.data(), i % 2 ? b.data() : a.data(), bytes);
    }
    const double s = seconds_since(t0);
    volatile char sink = a[bytes / 2] + b[bytes / 3];
    (void)sink;
    return static_cast<double>(bytes) * iters / s / 1e9;
}

// Seconds per all-reduce of `bytes` over `ranks` threads (rank 0's clock, between barriers).
double allreduce_seconds(int ranks, std::size_t bytes, tandem::ReduceAlgorithm algorithm) {
    auto comm = tandem::make_inproc_communicator(ranks);
    const std::size_t count = bytes / sizeof(float);
    // Zeros stay zeros: no overflow or denormals however many sums in place.
    std::vector<std::vector<float>> buffers(static_cast<std::size_t>(ranks),
                                            std::vector<float>(count, 0.0f));
    const int iters = iterations_for(bytes);
    double elapsed = 0;
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
        threads.emplace_back([&, r] {
            float* data = buffers[static_cast<std::size_t>(r)].data();
            comm->all_reduce_sum(r, data, count, algorithm);  // warm-up
            comm->barrier(r);
            const auto t0 = Clock::now();
            for (int i = 0; i < iters; ++i) comm->all_reduce_sum(r, data, count, algorithm);
            if (r == 0) elapsed = seconds_since(t0);
        });
    for (auto& t : threads) t.join();
    return elapsed / iters;
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t max_mb = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 64;
    std::printf("%-6s %-5s %8s %10s %10s %10s %12s\n", "ranks", "algo", "size", "time_ms", "algbw",
                "busbw", "memcpy_GB/s");
    for (int ranks : {2, 4}) {
        for (std::size_t mb = 1; mb <= max_mb; mb *= 2) {
            const std::size_t bytes = mb << 20;
            const double copy = memcpy_gbps(bytes);
            for (auto algorithm : {tandem::ReduceAlgorithm::ring, tandem::ReduceAlgorithm::tree}) {
                const double s = allreduce_seconds(ranks, bytes, algorithm);
                const double algbw = static_cast<double>(bytes) / s / 1e9;
                const double busbw = algbw * 2.0 * (ranks - 1) / ranks;
                std::printf("%-6d %-5s %6zuMB %10.3f %10.2f %10.2f %12.2f\n", ranks,
                            std::string(tandem::reduce_algorithm_name(algorithm)).c_str(), mb,
                            s * 1e3, algbw, busbw, copy);
            }
        }
    }
    return 0;
}

// A parallel region in which each thread works in its own block of the device's per-call
// scratch: the kernels that keep per-thread partial sums (Winograd's, thin_input's and gemm's
// weights' gradients) and per-thread tiles or column matrices.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace tandem::cpu {

struct TeamRun {
    // The threads that ran: OpenMP may start fewer than asked (inside another team, say), and
    // only their blocks hold anything.
    int team = 1;
    bool failed = false;  // body returned false on some thread
};

// body(block) on up to `threads` threads, thread t's block at scratch + t * block_bytes. Every
// thread of the team calls it, so body may share work out with `#pragma omp for`.
template <typename Body>
TeamRun run_in_blocks(char* scratch, std::size_t block_bytes, int threads, Body&& body) {
    int team = 1;
    bool failed = false;
#pragma omp parallel num_threads(threads) reduction(|| : failed)
    {
        if (omp_get_thread_num() == 0) team = omp_get_num_threads();
        failed = !body(scratch + static_cast<std::size_t>(omp_get_thread_num()) * block_bytes);
    }
    return {team, failed};
}

// Inside run_in_blocks' body: this thread's share of `items` (as equal as whole items allow),
// handed to piece(first, count) in runs of at most `most`. `#pragma omp for` over pieces of a
// fixed size gives one thread a piece more than another where their number is odd: ResNet-20's
// 64-channel Winograd layers (512 tiles, 14 a piece) gave one thread 19 pieces and the other 18.
template <typename Piece>
void own_share(std::int64_t items, std::int64_t most, Piece&& piece) {
    const std::int64_t thread = omp_get_thread_num(), team = omp_get_num_threads();
    const std::int64_t end = items * (thread + 1) / team;
    for (std::int64_t first = items * thread / team; first < end; first += most)
        piece(first, std::min(most, end - first));
}

}  // namespace tandem::cpu

// A parallel region in which each thread works in its own block of the device's per-call
// scratch: the kernels that keep per-thread partial sums (Winograd's, thin_input's and gemm's
// weights' gradients) and per-thread tiles or column matrices.
#pragma once

#include <omp.h>

#include <cstddef>

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

}  // namespace tandem::cpu

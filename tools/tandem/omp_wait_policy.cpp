// GNU OpenMP's threads spin on a finished parallel region for a while before they sleep, so
// that the next region starts sooner. Its default (GOMP_SPINCOUNT 300,000 turns, milliseconds)
// takes the cores other threads need: the loader's decoding threads, the other devices' worker
// teams, a second process; on this project's 2-core machine with a compiler running beside it,
// `tandem bench smallbn --threads=2` went at 52 images/s spinning and 240 sleeping. Sleeping at
// once (OMP_WAIT_POLICY=passive, Tandem's choice until session 21) costs a futex wake-up at
// every region instead: on a quiet Zen 5, lenet5 ran 25-35% and resnet20 9-12% slower on two
// threads than with a spin of about 75 us, which on a busy machine measured no worse than
// sleeping (docs/benchmarks.md, "OpenMP's spin, bounded in time").
//
// libgomp counts its spin in turns, not time, and reads GOMP_SPINCOUNT once, in its
// constructor, before main() runs; glibc's own start-up hands every library the environment the
// process began with, so setting the variable from inside the process is too late. The process
// times the turns and starts itself again with the count set. Where libgomp finds more of its
// threads than cores (several devices' teams) it cuts the spin to 100 turns on its own.
// tests/lua/test_command_line.lua reads the spin count libgomp took (OMP_DISPLAY_ENV).
#include "omp_wait_policy.h"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>

namespace tandem::tool {

namespace {

// libgomp's cpu_relax (config/linux/x86/futex.h; a compiler barrier elsewhere).
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    asm volatile("" ::: "memory");
#endif
}

// The spin: long enough that a thread waiting between two of a step's parallel regions (tens of
// microseconds apart) is still awake for the next, short enough that a finished team gives its
// cores back to the loader, the other devices and other processes almost at once.
constexpr double kSpinMicroseconds = 75;

// libgomp's turns of spinning (a relaxed load and a pause each) that take `microseconds` on
// this CPU: a pause lasts from a few cycles to over a hundred on different x86 cores.
long long spin_turns(double microseconds) {
    constexpr int kTurns = 20000;  // 0.1-2 ms a round on the CPUs seen
    volatile int released = 0;     // what a waiting thread watches
    double fastest_ns = 1e300;
    for (int round = 0; round < 3; ++round) {  // the fastest of three: preemption only adds
        const auto start = std::chrono::steady_clock::now();
        for (int turn = 0; turn < kTurns && released == 0; ++turn) relax();
        const std::chrono::duration<double, std::nano> took =
            std::chrono::steady_clock::now() - start;
        fastest_ns = std::min(fastest_ns, took.count());
    }
    const double turn_ns = std::max(fastest_ns / kTurns, 0.1);
    return std::clamp(std::llround(microseconds * 1e3 / turn_ns), 100LL, 10'000'000LL);
}

}  // namespace

void bound_openmp_spinning(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr)
        return;
    setenv("GOMP_SPINCOUNT", std::to_string(spin_turns(kSpinMicroseconds)).c_str(), 1);
    // By the executable's own path, which names the process (top, ps) after it: started as
    // /proc/self/exe, it would be called "exe".
    char path[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n > 0) {
        path[n] = '\0';
        execv(path, argv);
    }
    // The file was replaced or removed since it started (a rebuild): its open image still runs.
    execv("/proc/self/exe", argv);
    // Only reached when the restart failed: carry on with libgomp's spinning default.
}

}  // namespace tandem::tool

// Work that keeps a core busy for a given time on the calling thread's own clock (time spent
// waiting for the core does not count), for tests of what the scheduler counts.
#pragma once

#include <ctime>

namespace tandem::test {

inline double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// Spins until the calling thread has had `seconds` of core time.
inline void spin_for(double seconds) {
    const double start = thread_cpu_seconds();
    volatile double x = 1;
    while (thread_cpu_seconds() - start < seconds) x = x * 1.0000001;
}

}  // namespace tandem::test

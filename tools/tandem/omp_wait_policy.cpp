// GNU OpenMP's threads spin on a finished parallel region for a while (GOMP_SPINCOUNT, 300,000
// turns by default) before they sleep, so that the next region starts a few microseconds
// sooner. In Tandem that spin takes the cores other threads need: the loader's decoding
// threads, the other devices' worker teams, a second process. On this project's 2-core
// machine with a compiler running beside it, `tandem bench smallbn --threads=2` went at 52
// images/s spinning and 240 sleeping; issue 21 saw an LMDB-fed run at 65-134 images/s against
// 431-484.
//
// libgomp reads OMP_WAIT_POLICY once, in its constructor, before main() runs, and glibc's own
// start-up hands every library the environment the process began with, so setting the
// variable from inside the process is too late. The process starts itself again with it set.
// tests/lua/test_command_line.lua reads the spin count libgomp took (OMP_DISPLAY_ENV).
#include "omp_wait_policy.h"

#include <limits.h>
#include <unistd.h>

#include <cstdlib>

namespace tandem::tool {

void let_idle_openmp_threads_sleep(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr)
        return;
    setenv("OMP_WAIT_POLICY", "passive", 1);
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

// What this machine's CPU can do at best, measured: the float32 FMA rate of its widest vector
// ISA on one core and on every core at once, and its memory bandwidth. Benchmarks quote their
// GFLOP/s against it (the machines Tandem runs on change, from AVX-512 Zen 5 to AVX2 Zen 3:
// no peak is written down anywhere). Measured in about a second and kept in a small file per
// CPU model and core count, so that every benchmark of a machine quotes the same peak.
#pragma once

#include <string>

namespace tandem {

struct CpuPeak {
    std::string model;            // the CPU's name, as /proc/cpuinfo gives it
    std::string isa;              // the FMA kernel measured: "AVX-512", "AVX2+FMA" or "SSE2"
    int cores = 1;                // logical cores (std::thread::hardware_concurrency)
    double gflops_one_core = 0;   // independent FMA chains on one thread
    double gflops_all_cores = 0;  // the same on every core at once
    double bandwidth_gbs = 0;     // a triad (a = b + s c) over arrays far beyond the caches
    std::string measured_at;      // UTC, ISO 8601
    std::string cache_file;       // where it was kept ("" when it could not be written)
};

// This CPU as its measurements are filed: model, widest FMA ISA and logical cores.
std::string cpu_identity();

// Measures now (about a second; the machine should be otherwise idle).
CpuPeak measure_cpu_peak();

// The cached measurement of this machine, measuring (and caching) when there is none, when the
// file is unreadable or for another CPU, or when `remeasure`. The cache lives in
// $TANDEM_CACHE_DIR, else $XDG_CACHE_HOME/tandem, else ~/.cache/tandem; a cache that cannot be
// written only costs the next process a measurement.
CpuPeak cpu_peak(bool remeasure = false);

}  // namespace tandem

// Machine probes: this machine's figures for what the simulator charges CPU devices beside
// their kernels (copies, hand-offs between workers, all-reduces in shared memory, updates side
// by side), each measured in milliseconds when a measured cost model first needs it.
#pragma once

#include <cstddef>
#include <vector>

#include "parallel/communicator.h"

namespace tandem {

// This machine's figures for hand-offs and copies between CPU devices (measure_machine_figures).
struct MachineFigures {
    double copy_gbs = 0;         // one thread's copy rate
    double handoff_ms = 0;       // waking a waiting worker on an idle core
    double busy_handoff_ms = 0;  // ... with every core busy
    double crowded_handoff_ms =
        0;  // ... a woken worker's wait for a core, twice as many runnable as cores
};

// This machine's single-thread copy rate (GB/s) and the time to wake a waiting thread (ms),
// measured in a few milliseconds: the MeasuredCostModel's transfer figures. With `busy_cores`
// > 0, the wake-up is measured while that many other threads keep the cores busy.
double measure_copy_gbs();
double measure_handoff_ms(int busy_cores = 0);
// How long a woken worker waits for a core while 2 x `cores` workers, in pairs, pass a token
// back and forth and work about a kernel's worth of CPU time before each pass (twice as many
// runnable as cores): the mean time from the hand-off to the receiver running. The scheduler
// does not preempt a worker that has been sleeping as often as the woken one, so this is a
// fraction of a time slice, not the microseconds of a wake-up beside spinning threads
// (measure_handoff_ms(cores)). Other workers use the cores meanwhile, so it delays only the
// receiver: on a pipeline's critical path it lengthens the step.
double measure_crowded_handoff_ms(int cores);
// The last-level data cache of this machine's first core, in bytes, as sysfs describes it (0
// where it does not).
std::size_t last_level_cache_bytes();
// All of the above for a machine of `cores` cores.
MachineFigures measure_machine_figures(int cores);
// The in-process communicator's all-reduce of `bytes` among `ranks` threads: the median wall
// time of a few calls (ms).
double measure_all_reduce_ms(std::size_t bytes, int ranks, ReduceAlgorithm algorithm);
// How much slower SGD's update of `bytes` of weights (with a momentum buffer or not) runs on
// `threads` one-thread devices at the same moment than on one alone: memory-bound, it is
// slowed far more by its neighbours than a convolution is.
double measure_update_slowdown(std::size_t bytes, int threads, bool momentum);

// The middle of a few measurements (the upper of the two middles for an even count); 0 for none.
double median_of(std::vector<double> values);

}  // namespace tandem

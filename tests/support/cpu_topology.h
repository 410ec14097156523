// A simulated machine of CPU devices for the planner's tests.
#pragma once

#include <cstddef>
#include <string>

#include "plan/topology.h"

namespace tandem::test {

// n CPU devices of `threads` threads each (and `memory` bytes) on a machine of `cores` cores;
// with cores = n * threads nothing slows a device but waiting.
inline Topology cpu_topology(int n, int cores, int threads = 1,
                             std::size_t memory = std::size_t(1) << 30) {
    TopologySpec spec;
    spec.name = "cpus";
    spec.nodes.push_back({"host", "", "", "", 0, 1, cores});
    for (int i = 0; i < n; ++i)
        spec.nodes.push_back(
            {"cpu:" + std::to_string(i), "host", "shared_memory", "cpu", memory, threads, 0});
    return Topology(spec);
}

}  // namespace tandem::test

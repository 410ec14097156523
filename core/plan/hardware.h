// Hardware models: what the planner knows of a device or a link it cannot measure.
//
// A device model gives peak rates and memory (what a kernel attains of them is the analytic cost
// model's, analytic_costs.h); a link model gives one direction's bandwidth and latency. The figures
// and their sources are in hardware.cpp, one comment per entry. CPU devices are not in the table:
// the planner measures them (see cost_model.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tandem {

struct DeviceModel {
    std::string name;        // "V100"
    double fp32_tflops = 0;  // peak FP32 rate (FMA units), as the datasheet counts it
    // What FP32 kernels attain of that count relative to the H200 the model was fitted on
    // (analytic_costs.cpp): Ampere and Hopper datasheets count a second FP32 datapath per SM
    // partition that convolutions rarely keep busy, Volta's and Pascal's count one.
    double fp32_attained = 1;
    double tf32_tflops = 0;    // peak TF32 tensor-core rate, dense (0: no TF32)
    double tensor_tflops = 0;  // peak FP16 tensor-core rate, dense (0: no tensor cores)
    double memory_gib = 0;     // device memory
    double bandwidth_gbs = 0;  // device memory bandwidth, GB/s
    // CUDA compute capability x 10 (35: Kepler GK110, 70: Volta, 90: Hopper): what NCCL's
    // tuning model reads of the GPUs (nccl_tuning.h: LL128, NVLS, its per-generation caps).
    int compute_capability = 0;
};

struct LinkModel {
    std::string name;          // "pcie3_x16"
    double bandwidth_gbs = 0;  // one direction, attainable by a large copy, GB/s
    double latency_us = 0;     // one message's fixed cost on this hop
    // Between machines (InfiniBand, Ethernet): devices joined only through such links are on
    // different machines, which NCCL's tree spans with a binary tree of machines.
    bool network = false;
    // NVLink: NCCL's tuning model takes NVLink-class hops' latencies (nccl_tuning.h) and
    // enables its LL128 protocol only over them.
    bool nvlink = false;
};

// Throws ConfigError naming the known models when `name` is not one.
const DeviceModel& device_model(std::string_view name);
const LinkModel& link_model(std::string_view name);
std::vector<std::string> device_model_names();
std::vector<std::string> link_model_names();

}  // namespace tandem

// Hardware models: what the planner knows of a device or a link it cannot measure.
//
// A device model gives peak rates, memory and the share of them a training step attains; a
// link model gives one direction's bandwidth and latency. The figures and their sources are in
// hardware.cpp, one comment per entry. CPU devices are not in the table: the planner measures
// them (see cost_model.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tandem {

struct DeviceModel {
    std::string name;               // "V100"
    double fp32_tflops = 0;         // peak FP32 rate
    double tensor_tflops = 0;       // peak FP16 tensor-core rate, dense (0: no tensor cores)
    double memory_gib = 0;          // device memory
    double bandwidth_gbs = 0;       // device memory bandwidth, GB/s
    double compute_fraction = 0;    // share of fp32_tflops convolutions and products attain
    double bandwidth_fraction = 0;  // share of bandwidth element-wise kernels attain
    double launch_us = 0;           // fixed cost of one kernel (launch and tail)
};

struct LinkModel {
    std::string name;          // "pcie3_x16"
    double bandwidth_gbs = 0;  // one direction, attainable by a large copy, GB/s
    double latency_us = 0;     // one message's fixed cost on this hop
    // Between machines (InfiniBand, Ethernet): devices joined only through such links are on
    // different machines, which NCCL's tree spans with a binary tree of machines.
    bool network = false;
};

// Throws ConfigError naming the known models when `name` is not one.
const DeviceModel& device_model(std::string_view name);
const LinkModel& link_model(std::string_view name);
std::vector<std::string> device_model_names();
std::vector<std::string> link_model_names();

}  // namespace tandem

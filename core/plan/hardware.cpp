#include "plan/hardware.h"

#include <algorithm>

#include "base/error.h"
#include "base/format.h"

namespace tandem {
namespace {

// Volta's and Pascal's FP32 kernels against the H200's, per datasheet FLOP: fitted by hand to
// the published FP32 training rates of one V100 (ResNet-50, DeepLearningExamples: -12% at 1.9)
// and one P100 (ResNet-50, VGG-16, AlexNet, TensorFlow's benchmarks: +3 to +8%) together.
// Kepler is left at 1; the K80's published figures check it (docs/planner.md).
constexpr double kOneDatapath = 1.9;

// Peak rates and memory from each model's datasheet. What kernels attain of them is the
// analytic cost model's (analytic_costs.cpp).
const std::vector<DeviceModel>& device_table() {
    static const std::vector<DeviceModel> table = {
        // Tesla K20c: 3.52 TFLOP/s FP32, 5 GB GDDR5 at 208 GB/s (NVIDIA Tesla K20 board
        // specification BD-06455).
        {"K20c", 3.52, 1, 0, 0, 5, 208, 35},
        // Tesla K80, one of its two GK210 GPUs: 2,496 cores at 875 MHz boost, 4.37 TFLOP/s
        // FP32, 12 GB at 240 GB/s (NVIDIA Tesla K80 board specification BD-07317).
        {"K80", 4.37, 1, 0, 0, 12, 240, 37},
        // Tesla P100 SXM2: 10.6 TFLOP/s FP32, 16 GB HBM2 at 732 GB/s (NVIDIA Tesla P100
        // datasheet); its 21.2 TFLOP/s FP16 is not on tensor cores.
        {"P100", 10.6, kOneDatapath, 0, 0, 16, 732, 60},
        // Tesla V100 PCIe 32 GB: 14 TFLOP/s FP32, 112 TFLOP/s tensor, 900 GB/s HBM2 (NVIDIA
        // Tesla V100 datasheet, 2018). The PCIe card: what a server of PCIe switches holds.
        {"V100", 14.0, kOneDatapath, 0, 112, 32, 900, 70},
        // Tesla V100 SXM2 32 GB: 15.7 TFLOP/s FP32, 125 tensor, 900 GB/s (same datasheet).
        {"V100-SXM2", 15.7, kOneDatapath, 0, 125, 32, 900, 70},
        // A100 SXM4 40 GB: 19.5 TFLOP/s FP32, 156 TF32 and 312 FP16 tensor (dense), 1,555 GB/s
        // HBM2 (NVIDIA A100 Tensor Core GPU datasheet).
        {"A100", 19.5, 1, 156, 312, 40, 1555, 80},
        // A100 SXM4 80 GB: the same rates, 2,039 GB/s HBM2e (same datasheet).
        {"A100-80GB", 19.5, 1, 156, 312, 80, 2039, 80},
        // A100 PCIe 80 GB: the same rates, 1,935 GB/s (same datasheet).
        {"A100-PCIe", 19.5, 1, 156, 312, 80, 1935, 80},
        // H100 SXM5 80 GB: 67 TFLOP/s FP32, 494.5 TF32 and 989 FP16 tensor (dense), 3.35 TB/s
        // HBM3 (NVIDIA H100 Tensor Core GPU datasheet).
        {"H100", 67.0, 1, 494.5, 989, 80, 3350, 90},
        // H100 PCIe 80 GB: 51 TFLOP/s FP32, 378 TF32, 756 FP16 tensor (dense), 2 TB/s HBM2e
        // (same datasheet).
        {"H100-PCIe", 51.0, 1, 378, 756, 80, 2000, 90},
        // H200 SXM 141 GB: the H100 SXM's rates, 4.8 TB/s HBM3e (NVIDIA H200 Tensor Core GPU
        // datasheet). The GPU bench/measured/h200-2026-11-26 was taken on.
        {"H200", 67.0, 1, 494.5, 989, 141, 4800, 90},
    };
    return table;
}

// Bandwidth: one direction, what a large copy attains (below the raw signalling rate, which
// is given beside it). Latency: one hop's fixed cost, including the DMA set-up for the first.
// NVLink entries are one link: a topology says how many join two GPUs (a peer's `count`) or a
// GPU to an NVSwitch fabric (the fabric's `count`), and their bandwidth adds up.
const std::vector<LinkModel>& link_table() {
    static const std::vector<LinkModel> table = {
        // PCIe 2.0 x16 (Tesla K20c, the first seed's cards): 5 GT/s x 16 lanes x 8b/10b = 8 GB/s
        // raw (PCI-SIG PCIe 2.0 specification); CUDA's bandwidthTest shows about 6 GB/s pinned
        // on Kepler boards (our reading of published runs; 0.75 of raw).
        {"pcie2_x16", 6.0, 2.0},
        // PCIe 3.0 x16: 8 GT/s x 16 lanes x 128/130 = 15.75 GB/s raw (PCI-SIG PCIe 3.0
        // specification); CUDA's bandwidthTest shows 12-13 GB/s pinned.
        {"pcie3_x16", 12.0, 1.5},
        // PCIe 4.0 x16: 31.5 GB/s raw; about 25 GB/s attained.
        {"pcie4_x16", 25.0, 1.5},
        // PCIe 5.0 x16: 63 GB/s raw; about 50 GB/s attained.
        {"pcie5_x16", 50.0, 1.5},
        // Intel QPI at 9.6 GT/s: 19.2 GB/s a direction (Xeon E5 v4 datasheet). GPU peer traffic
        // between sockets is staged through host memory (no peer access across the I/O hub):
        // NVIDIA's p2pBandwidthLatencyTest on such servers typically shows 8-10 GB/s.
        {"qpi", 9.0, 5.0},
        // Intel UPI at 10.4 GT/s: 20.8 GB/s a direction (Xeon Scalable datasheet); staged as above.
        {"upi", 10.0, 5.0},
        // AMD Infinity Fabric between EPYC sockets (xGMI, the DGX A100's two EPYC 7742): xGMI-2
        // links at 16 GT/s x16, 32 GB/s a direction each (AMD EPYC 7002 platform brief). GPU
        // peer traffic across sockets is staged through host memory as above; we take 20 GB/s,
        // our assumption (no published peer figure found).
        {"xgmi", 20.0, 5.0},
        // NVLink 1 (P100): 20 GB/s a direction per link, four links a GPU (Tesla P100
        // whitepaper, 2016); we take 0.9 of it attained, as NVLink 2 below.
        {"nvlink1", 18.0, 2.0, false, true},
        // NVLink 2 (V100): 25 GB/s a direction per link, six links a GPU (Tesla V100
        // whitepaper); DGX-1 pairs use one or two. About 22 GB/s attained per link.
        {"nvlink2", 22.0, 2.0, false, true},
        // NVLink 3 (A100): 25 GB/s a direction per link, 12 links a GPU = 300 GB/s (A100
        // datasheet). NCCL loses about 20% of NVLink's line rate to its protocol (NCCL's
        // maintainer, NVIDIA/nccl-tests issue #212, 2024): 20 GB/s a link attained.
        {"nvlink3", 20.0, 2.0, false, true},
        // NVLink 4 (H100): 25 GB/s a direction per link, 18 links a GPU = 450 GB/s (H100
        // datasheet); NCCL's ring reaches 370 GB/s of bus bandwidth on 8 H100 (same issue):
        // 20.5 GB/s a link.
        {"nvlink4", 20.5, 2.0, false, true},
        // InfiniBand EDR 4x: 100 Gb/s = 12.5 GB/s; HDR 200 Gb/s; NDR 400 Gb/s (InfiniBand Trade
        // Association roadmap). Latency through one switch: about 1.5 us (NVIDIA ConnectX
        // adapter and Quantum switch briefs). Links between machines.
        {"ib_edr", 11.5, 1.5, true},
        {"ib_hdr", 23.0, 1.5, true},
        {"ib_ndr", 46.0, 1.5, true},
        // Ethernet: 10/25/100 Gb/s = 1.25/3.1/12.5 GB/s raw; about 90% attained by TCP, with
        // about 20 us of kernel and stack latency a message.
        {"eth_10g", 1.1, 20.0, true},
        {"eth_25g", 2.8, 20.0, true},
        {"eth_100g", 11.0, 20.0, true},
        // Between CPU devices of one process: a copy in shared memory. The planner measures it on
        // the machine at hand and uses that figure instead; this is a DDR4 server's single-thread
        // copy rate, for topologies read without measuring.
        {"shared_memory", 8.0, 0.5},
    };
    return table;
}

template <class Model>
std::vector<std::string> names_of(const std::vector<Model>& table) {
    std::vector<std::string> names;
    for (const auto& m : table) names.push_back(m.name);
    return names;
}

template <class Model>
const Model& find(const std::vector<Model>& table, std::string_view name, const char* what) {
    const auto it =
        std::find_if(table.begin(), table.end(), [&](const Model& m) { return m.name == name; });
    if (it != table.end()) return *it;
    TANDEM_THROW(ConfigError) << "unknown " << what << " '" << name
                              << "'; known: " << join(names_of(table), ", ");
}

}  // namespace

const DeviceModel& device_model(std::string_view name) {
    return find(device_table(), name, "device model");
}
const LinkModel& link_model(std::string_view name) {
    return find(link_table(), name, "link model");
}
std::vector<std::string> device_model_names() {
    return names_of(device_table());
}
std::vector<std::string> link_model_names() {
    return names_of(link_table());
}

}  // namespace tandem

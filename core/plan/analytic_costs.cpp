#include "plan/analytic_costs.h"

#include <algorithm>
#include <array>

#include "base/error.h"
#include "plan/hardware.h"

namespace tandem {
namespace {

// What a kernel of a class costs a pass: a fixed cost in microseconds, then, for FLOP classes,
// the time of its FLOPs W at the peak's rate times per_work, plus W / s at that rate times
// per_narrow_work, s being the product's narrowest dimension (W / s is the product's traffic:
// twice the rows times the wider of the other two): fraction = 1 / per_work, and a narrow
// product is slower. Pooling and memory classes: the time of their bytes at the bandwidth
// times per_work.
struct ClassCost {
    double fixed_us, per_work, per_narrow_work;
};
struct PassCosts {
    std::array<ClassCost, kKernelClasses> forward, backward;
};

// Float32 on the FMA units, fitted by bench/gpu_fit.py to the per-layer times of ResNet-50,
// VGG-16 and AlexNet at batches 8 and 64 on an H200 (bench/measured/h200-2026-11-26/layers.txt:
// cuDNN and cuBLAS with TF32 off, the algorithms cuDNN's benchmark mode picked): least squares
// over 192 layers a pass. The whole steps it predicts are within 7% of those measured, but
// AlexNet's at batch 8 (36% over). cuDNN's 3x3 convolutions (Winograd) do fewer multiplications
// than the FLOPs counted: per_work below 1.
constexpr PassCosts kFloat32 = {
    {{
        {200.2, 0.325, 60.4},  // conv 3x3
        {45.2, 2.762, 19.1},   // conv 1x1
        {91.5, 0.0, 207.6},    // conv other
        {33.5, 0.601, 68.7},   // gemm
        {1.3, 4.233, 0},       // pool
        {0.0, 1.712, 0},       // memory
    }},
    {{
        {213.3, 0.037, 176.3},
        {55.6, 2.794, 108.5},
        {122.0, 0.0, 183.1},
        {46.2, 0.984, 58.1},
        {13.5, 12.256, 0},
        {0.0, 1.073, 0},
    }},
};

// On tensor cores (TF32, FP16, BF16) the FLOP classes take the same costs at the tensor peak's
// rate: no constant of their own is fitted. NVIDIA's published ResNet-50 rates check it
// (docs/planner.md's validation table: A100 TF32 +18%, FP16 -14%; V100 FP16 -22%).

// A kernel launch, for the loss and the update: 3-7 us on these generations (CUDA C Best
// Practices Guide, "Kernel launch overhead").
constexpr double kLaunchUs = 5;

// The peak, FLOP/ms, that `p` runs the FLOP classes at on `m`.
double peak_flops_per_ms(Precision p, const DeviceModel& m) {
    switch (p) {
        case Precision::fp32: return m.fp32_tflops * m.fp32_attained * 1e9;
        case Precision::tf32:
            return m.tf32_tflops > 0 ? m.tf32_tflops * 1e9 : m.fp32_tflops * m.fp32_attained * 1e9;
        case Precision::fp16:
        case Precision::bf16:
            // Without tensor cores (P100, K20c) half precision runs at the FMA units' rate:
            // P100's doubled FP16 rate is not what cuDNN's training convolutions reach.
            return m.tensor_tflops > 0 ? m.tensor_tflops * 1e9
                                       : m.fp32_tflops * m.fp32_attained * 1e9;
    }
    return m.fp32_tflops * 1e9;
}

// Bytes of an activation element relative to float32.
double activation_scale(Precision p) {
    return p == Precision::fp16 || p == Precision::bf16 ? 0.5 : 1.0;
}

}  // namespace

AnalyticCostModel::AnalyticCostModel(NetShapes shapes, bool momentum, Precision precision)
    : shapes_(std::move(shapes)), momentum_(momentum), precision_(precision) {}

std::vector<KernelTime> AnalyticCostModel::kernel_times(std::size_t layer,
                                                        const TopologyDevice& device,
                                                        std::int64_t batch) const {
    const DeviceModel& m = device_model(device.model);
    if (precision_ == Precision::bf16 && m.tf32_tflops <= 0)
        TANDEM_THROW(ConfigError) << "precision 'bf16' needs an Ampere or later GPU; the " << m.name
                                  << " has none (use fp16 or fp32)";
    const double peak = peak_flops_per_ms(precision_, m);
    const double bandwidth = m.bandwidth_gbs * 1e6;  // bytes/ms
    const double scale = activation_scale(precision_);
    const auto b = static_cast<double>(batch);
    std::vector<KernelTime> times;
    const std::vector<KernelShape>& leaves = shapes_.layers.at(layer).leaves;
    for (std::size_t k = 0; k < leaves.size(); ++k) {
        const KernelShape& leaf = leaves[k];
        if (!leaf.launches) {
            times.push_back({});
            continue;
        }
        const auto c = static_cast<std::size_t>(leaf.kernel_class);
        const bool flop_class =
            leaf.kernel_class != KernelClass::memory && leaf.kernel_class != KernelClass::pool;
        const auto cost = [&](const ClassCost& e, double work_factor) {
            if (!flop_class) {
                const double bytes = static_cast<double>(leaf.activation_bytes) * b * scale +
                                     static_cast<double>(leaf.parameter_bytes);
                return (e.fixed_us / 1e3) + work_factor * bytes / bandwidth * e.per_work;
            }
            const double work = work_factor * leaf.flops * b / peak;
            std::int64_t narrow = 0;
            for (std::int64_t d : {leaf.rows * batch, leaf.columns, leaf.inner})
                if (d > 0) narrow = narrow > 0 ? std::min(narrow, d) : d;
            const double per_narrow =
                narrow > 0 ? e.per_narrow_work / static_cast<double>(narrow) : 0;
            return e.fixed_us / 1e3 + work * (e.per_work + per_narrow);
        };
        // The net's first kernel computes no input gradient.
        const double backward_work = layer == 0 && k == 0 ? 1.0 : 2.0;
        times.push_back({cost(kFloat32.forward[c], 1.0),
                         cost(kFloat32.backward[c], flop_class ? backward_work : 2.0)});
    }
    return times;
}

std::vector<LayerCost> AnalyticCostModel::layer_costs(const TopologyDevice& device,
                                                      std::int64_t batch) const {
    const double scale = activation_scale(precision_);
    const auto activations = [&](std::size_t bytes) {
        return static_cast<std::size_t>(static_cast<double>(bytes) * scale) *
               static_cast<std::size_t>(batch);
    };
    std::vector<LayerCost> costs;
    for (std::size_t i = 0; i < shapes_.layers.size(); ++i) {
        const LayerShape& l = shapes_.layers[i];
        LayerCost c;
        c.name = l.name;
        for (const KernelTime& t : kernel_times(i, device, batch)) {
            c.forward_ms += t.forward_ms;
            c.backward_ms += t.backward_ms;
        }
        c.parameter_bytes = l.parameter_bytes;
        c.parameter_tensor_bytes = l.parameter_tensor_bytes;
        c.optimizer_bytes = momentum_ ? l.parameter_bytes : 0;
        c.input_bytes = activations(l.kept_input_bytes);
        c.saved_bytes = activations(l.saved_bytes);
        c.output_bytes = activations(l.output_bytes);
        // Backward holds the output's gradient and writes the input's.
        c.workspace_bytes = activations(l.input_bytes + l.output_bytes);
        costs.push_back(std::move(c));
    }
    return costs;
}

double AnalyticCostModel::loss_ms(const TopologyDevice& device, std::int64_t batch) const {
    const DeviceModel& m = device_model(device.model);
    const ClassCost& mem = kFloat32.forward[static_cast<std::size_t>(KernelClass::memory)];
    // Softmax and cross-entropy forward, its gradient: three passes over the logits, two
    // kernels.
    const double bytes = 3.0 * static_cast<double>(batch * shapes_.classes) * sizeof(float);
    return bytes / (m.bandwidth_gbs * 1e6) * mem.per_work + 2 * kLaunchUs / 1e3;
}

double AnalyticCostModel::update_ms(const TopologyDevice& device, std::int64_t /*batch*/,
                                    std::size_t parameter_bytes,
                                    std::size_t parameter_tensors) const {
    const DeviceModel& m = device_model(device.model);
    const ClassCost& mem = kFloat32.forward[static_cast<std::size_t>(KernelClass::memory)];
    // SGD reads weight and gradient (and momentum) and writes the weight (and momentum), in
    // float32 whatever the precision (master weights), one kernel per parameter tensor: 161
    // launches for ResNet-50, about 1 ms of its 18 ms step at batch 8 on the H200 (layers.txt).
    const double passes = momentum_ ? 5.0 : 3.0;
    const double launches = static_cast<double>(std::max<std::size_t>(1, parameter_tensors));
    return passes * static_cast<double>(parameter_bytes) / (m.bandwidth_gbs * 1e6) * mem.per_work +
           launches * kLaunchUs / 1e3;
}

}  // namespace tandem

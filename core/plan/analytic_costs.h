// AnalyticCostModel: costs for devices we cannot run (GPUs from the hardware table), kernel by
// kernel from the layers' shapes.
//
// Each leaf of a layer (gpu_kernels.h) is one kernel a pass, timed as a roofline with a fixed
// cost: fixed + max(FLOPs / attained rate, bytes / attained bandwidth). The attained rate is a
// fraction of the device's peak for the kernel's class and the step's precision (float32 on the
// FMA units, TF32 or half precision on tensor cores); the fixed cost (launch, the tail of a
// kernel's last wave) is what makes a small micro-batch cost more per sample than a large one.
// Backward does twice the forward FLOPs (the input's gradient and the weights'; once for the
// net's first kernel, whose input needs none) and moves twice the bytes. The fractions and fixed
// costs were fitted to per-layer measurements and to published figures: analytic_costs.cpp says
// which fitted what. A layer opened into units costs the sum of its units' kernels, as it does
// whole.
#pragma once

#include <string_view>

#include "device/precision.h"
#include "plan/cost_model.h"
#include "plan/hardware.h"

namespace tandem {

// One kernel's times.
struct KernelTime {
    double forward_ms = 0, backward_ms = 0;
};

class AnalyticCostModel final : public CostModel {
public:
    // `momentum`: the optimizer keeps a buffer per weight.
    AnalyticCostModel(NetShapes shapes, bool momentum, Precision precision = Precision::fp32);
    std::vector<LayerCost> layer_costs(const TopologyDevice& device,
                                       std::int64_t batch) const override;
    double loss_ms(const TopologyDevice& device, std::int64_t batch) const override;
    double update_ms(const TopologyDevice& device, std::int64_t batch, std::size_t parameter_bytes,
                     std::size_t parameter_tensors) const override;
    double copy_gbs() const override { return 0; }
    double handoff_ms() const override { return 0; }

    // Layer `layer`'s kernels, one by one (what layer_costs sums).
    std::vector<KernelTime> kernel_times(std::size_t layer, const TopologyDevice& device,
                                         std::int64_t batch) const;
    Precision precision() const override { return precision_; }

private:
    NetShapes shapes_;
    bool momentum_;
    Precision precision_;
};

}  // namespace tandem

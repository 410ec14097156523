// AnalyticCostModel: costs for devices we cannot run (GPUs from the hardware table), a roofline
// per layer from its shapes. Forward time = max(FLOPs / attained rate, bytes moved / attained
// bandwidth) + one launch per kernel; backward = twice the forward FLOPs (the gradient of the
// input and of the weights), once for the first layer (no input gradient).
#pragma once

#include "plan/cost_model.h"

namespace tandem {

class AnalyticCostModel final : public CostModel {
public:
    // `momentum`: the optimizer keeps a buffer per weight.
    AnalyticCostModel(NetShapes shapes, bool momentum);
    std::vector<LayerCost> layer_costs(const TopologyDevice& device,
                                       std::int64_t batch) const override;
    double loss_ms(const TopologyDevice& device, std::int64_t batch) const override;
    double update_ms(const TopologyDevice& device, std::size_t parameter_bytes) const override;
    double copy_gbs() const override { return 0; }
    double handoff_ms() const override { return 0; }

private:
    NetShapes shapes_;
    bool momentum_;
};

}  // namespace tandem

// AnalyticCostModel: costs for devices we cannot run (GPUs from the hardware table), a roofline
// per layer from its shapes. Forward time = max(FLOPs / attained rate, bytes moved / attained
// bandwidth) + one launch per kernel; backward = twice the forward FLOPs (the gradient of the
// input and of the weights), once for the first layer (no input gradient).
//
// The roofline is a top-level layer's: a residual block's memory traffic is hidden under its
// compute as one layer, and the compute fraction of the device table was fitted that way. A
// layer opened into units (a graph's nodes, a block's layers: NetShapes::whole) costs what it
// costs whole, shared among its units in proportion to each one's own roofline, so opening a
// layer moves where a stage can end but never what the net costs.
#pragma once

#include "plan/cost_model.h"
#include "plan/hardware.h"

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
    // Scales the units that are parts of an opened layer to that layer's own roofline.
    void share_whole_layers(std::vector<LayerCost>& costs, const DeviceModel& m,
                            std::int64_t batch) const;

    NetShapes shapes_;
    bool momentum_;
};

}  // namespace tandem

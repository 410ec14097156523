// Cost models: what one micro-batch costs on a device of a topology, per top-level layer; the
// interface the simulator and the planner read.
//
// Two kinds implement it:
//  - AnalyticCostModel (analytic_costs.h), for devices we cannot run (GPUs from the hardware
//    table): a roofline per layer from its shapes;
//  - MeasuredCostModel (measured_costs.h), for the CPU devices here: profiles at each
//    micro-batch size, with this machine's figures for hand-offs, copies and contention
//    (machine_probe.h).
//
// Both start from NetShapes: the net's per-sample FLOPs and bytes, computed from the layers'
// shapes without allocating anything.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device/precision.h"
#include "parallel/communicator.h"
#include "parallel/unit_placement.h"
#include "plan/gpu_kernels.h"
#include "plan/stage_cost.h"
#include "plan/topology.h"

namespace tandem {

// One top-level layer (or a unit of a placement: a graph's node), per sample (activations and
// FLOPs grow with the batch; weights do not).
struct LayerShape {
    std::string name, kind;
    double forward_flops = 0;  // one sample's forward
    std::size_t parameter_bytes = 0;
    // each parameter tensor (parameter_tensor_bytes())
    std::vector<std::size_t> parameter_tensor_bytes;
    std::size_t input_bytes = 0;  // one sample's input (a join's: all of them)
    // Of those, the bytes it keeps for backward that no earlier unit reading the same value
    // keeps already (a block's input, read by its body and its shortcut, is held once).
    std::size_t kept_input_bytes = 0;
    std::size_t output_bytes = 0;  // one sample's output
    std::size_t saved_bytes = 0;   // what it keeps for backward besides its input
    // The kernels it launches, leaf by leaf (gpu_kernels.h): what the analytic model times.
    std::vector<KernelShape> leaves;
};

struct NetShapes {
    std::vector<LayerShape> layers;
    Shape sample;              // C x H x W
    std::int64_t classes = 0;  // the last layer's width
    std::size_t parameter_bytes() const;
    double forward_flops() const;  // one sample
};

// Per top-level layer.
NetShapes net_shapes(Sequential& net, const Shape& sample);
// Per unit of a placement (parallel/unit_placement.h), in its order: what the stages' layer
// ranges index. For a chain (chain_units) the same as net_shapes.
NetShapes net_shapes(Sequential& net, const Shape& sample, const UnitPlacement& placed);
// The placement's stage graph with each edge's bytes for micro-batches of `batch` samples:
// the images, or the value a stage sends (its unit's output), as the simulator moves them.
StageGraph placement_graph(const UnitPlacement& placed, const NetShapes& shapes,
                           std::int64_t batch);

class CostModel {
public:
    virtual ~CostModel() = default;
    // Cost of one micro-batch of `batch` samples through each top-level layer on `device`.
    virtual std::vector<LayerCost> layer_costs(const TopologyDevice& device,
                                               std::int64_t batch) const = 0;
    // The loss's forward and backward on the last stage, and what else a step spends per
    // micro-batch there (label copy, bookkeeping).
    virtual double loss_ms(const TopologyDevice& device, std::int64_t batch) const = 0;
    // The optimizer step over `parameter_bytes` of weights in `parameter_tensors` tensors on
    // `device` (a GPU launches an update kernel for each tensor), after the backward of
    // micro-batches of `batch` samples (whose activations left the weights out of the caches).
    virtual double update_ms(const TopologyDevice& device, std::int64_t batch,
                             std::size_t parameter_bytes, std::size_t parameter_tensors) const = 0;
    // CPU devices: the receiving worker copies an activation or gradient itself, at this rate
    // (GB/s); handing it over costs handoff_ms (a waiting thread woken).
    virtual double copy_gbs() const = 0;
    virtual double handoff_ms() const = 0;
    // The same hand-off while every core is busy: the woken worker waits for the scheduler to
    // give it a core.
    virtual double busy_handoff_ms() const { return handoff_ms(); }
    // A CPU worker's copy of `bytes` at copy_gbs (0 where the model has none).
    double cpu_copy_ms(std::size_t bytes) const {
        return copy_gbs() > 0 ? static_cast<double>(bytes) / (copy_gbs() * 1e6) : 0.0;
    }
    // CPU devices: the last-level cache, which activations kept in flight can overflow (0: not
    // modelled).
    virtual std::size_t cache_bytes() const { return 0; }
    // Readies the figures of these batch sizes on `device` before a search or simulation asks
    // for them one by one (a measured model profiles them now, taking turns); nothing otherwise.
    virtual void prefetch(const TopologyDevice& device, std::vector<std::int64_t> batches) const {
        (void)device, (void)batches;
    }
    // And while more workers than cores want to run, each handing work to another in turn (a
    // pipeline of one-thread devices over fewer cores): the woken worker queues behind others
    // that are as entitled to the core as it is. (The simulator also charges it, one wake-up in
    // `cores`, to a receiver woken beside a sender that goes on working: wake_up_ms.)
    virtual double crowded_handoff_ms() const { return busy_handoff_ms(); }
    // CPU devices: an all-reduce of `bytes` among `ranks` devices of one machine, in shared
    // memory (the in-process communicator), as wall time when nothing else runs. By default
    // from the copy rate and the hand-off: each step a rank reads two chunks and writes one,
    // then waits for its neighbour.
    virtual double cpu_all_reduce_ms(std::size_t bytes, int ranks, ReduceAlgorithm algorithm) const;
    // CPU devices: how much slower each of `busy` one-thread kernels runs when that many run at
    // once on a machine of `cores` cores, at micro-batches of `batch` (shared caches and memory
    // bandwidth; with more busy than cores, what time slicing costs beyond the proportional
    // share, which the simulator applies itself): 1 for one, more for several.
    virtual double contention(int busy, int cores, std::int64_t batch) const {
        (void)busy, (void)cores, (void)batch;
        return 1;
    }
    // The same for the optimizer's update on `busy` devices at once (they all update right
    // after the step's barrier): memory-bound, it is slowed in its own way.
    virtual double update_contention(int busy, int cores, std::int64_t batch) const {
        (void)busy, (void)cores, (void)batch;
        return 1;
    }
    // What the net's convolutions and products compute in. A run in fp16 scales its loss (the
    // engine's loss_scale 'auto'), so its programs hold each stage's unscale pass.
    virtual Precision precision() const { return Precision::fp32; }
};

}  // namespace tandem

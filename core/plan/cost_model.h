// Cost models: what one micro-batch costs on a device of a topology, per top-level layer.
//
// Two kinds:
//  - AnalyticCostModel, for devices we cannot run (GPUs from the hardware table): a roofline
//    per layer from its shapes. Forward time = max(FLOPs / attained rate, bytes moved /
//    attained bandwidth) + one launch per kernel; backward = twice the forward FLOPs (the
//    gradient of the input and of the weights), once for the first layer (no input gradient).
//  - MeasuredCostModel, for the CPU devices here: the profiler's medians at each micro-batch
//    size, taken on a device with the topology device's thread count, cached.
//
// Both start from NetShapes: the net's per-sample FLOPs and bytes, computed from the layers'
// shapes without allocating anything.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "parallel/communicator.h"
#include "plan/profiler.h"
#include "plan/stage_cost.h"
#include "plan/topology.h"

namespace tandem {

// One top-level layer, per sample (activations and FLOPs grow with the batch; weights do not).
struct LayerShape {
    std::string name, kind;
    double forward_flops = 0;         // one sample's forward
    std::size_t parameter_bytes = 0;
    std::vector<std::size_t> parameter_tensor_bytes;  // each parameter tensor (parameter_tensor_bytes())
    std::size_t input_bytes = 0;      // one sample's input
    std::size_t output_bytes = 0;     // one sample's output
    std::size_t saved_bytes = 0;      // what it keeps for backward besides its input
    int kernels = 1;                  // leaf layers in it: kernels launched a pass
};

struct NetShapes {
    std::vector<LayerShape> layers;
    Shape sample;                     // C x H x W
    std::int64_t classes = 0;         // the last layer's width
    std::size_t parameter_bytes() const;
    double forward_flops() const;     // one sample
};

NetShapes net_shapes(Sequential& net, const Shape& sample);

class CostModel {
public:
    virtual ~CostModel() = default;
    // Cost of one micro-batch of `batch` samples through each top-level layer on `device`.
    virtual std::vector<LayerCost> layer_costs(const TopologyDevice& device, std::int64_t batch) const = 0;
    // The loss's forward and backward on the last stage, and what else a step spends per
    // micro-batch there (label copy, bookkeeping).
    virtual double loss_ms(const TopologyDevice& device, std::int64_t batch) const = 0;
    // The optimizer step over `parameter_bytes` of weights on `device`.
    virtual double update_ms(const TopologyDevice& device, std::size_t parameter_bytes) const = 0;
    // CPU devices: the receiving worker copies an activation or gradient itself, at this rate
    // (GB/s); handing it over costs handoff_ms (a waiting thread woken).
    virtual double copy_gbs() const = 0;
    virtual double handoff_ms() const = 0;
    // The same hand-off while every core is busy: the woken worker waits for the scheduler to
    // give it a core.
    virtual double busy_handoff_ms() const { return handoff_ms(); }
    // Readies the figures of these batch sizes on `device` before a search or simulation asks
    // for them one by one (a measured model profiles them now, taking turns); nothing otherwise.
    virtual void prefetch(const TopologyDevice& device, std::vector<std::int64_t> batches) const {
        (void)device, (void)batches;
    }
    // And while more workers than cores want to run, each handing work to another in turn (a
    // pipeline of one-thread devices over fewer cores): the woken worker queues behind others
    // that are as entitled to the core as it is.
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
};

class AnalyticCostModel final : public CostModel {
public:
    // `momentum`: the optimizer keeps a buffer per weight.
    AnalyticCostModel(NetShapes shapes, bool momentum);
    std::vector<LayerCost> layer_costs(const TopologyDevice& device, std::int64_t batch) const override;
    double loss_ms(const TopologyDevice& device, std::int64_t batch) const override;
    double update_ms(const TopologyDevice& device, std::size_t parameter_bytes) const override;
    double copy_gbs() const override { return 0; }
    double handoff_ms() const override { return 0; }

private:
    NetShapes shapes_;
    bool momentum_;
};

// This machine's figures for hand-offs and copies between CPU devices (measure_machine_figures).
struct MachineFigures {
    double copy_gbs = 0;            // one thread's copy rate
    double handoff_ms = 0;          // waking a waiting worker on an idle core
    double busy_handoff_ms = 0;     // ... with every core busy
    double crowded_handoff_ms = 0;  // ... a woken worker's wait for a core, twice as many runnable as cores
};

class MeasuredCostModel final : public CostModel {
public:
    // profile(threads, batch, after_step): the net profiled on a CPU device with that many
    // threads; `after_step`, when set, goes to ProfileOptions::after_step.
    using Profiler = std::function<NetProfile(int threads, std::int64_t batch, std::function<void()> after_step)>;
    // `rounds`: how many times prefetch() profiles each batch size (see there).
    MeasuredCostModel(NetShapes shapes, bool momentum, Profiler profiler, MachineFigures machine, int rounds = 1);
    std::vector<LayerCost> layer_costs(const TopologyDevice& device, std::int64_t batch) const override;
    double loss_ms(const TopologyDevice& device, std::int64_t batch) const override;
    double update_ms(const TopologyDevice& device, std::size_t parameter_bytes) const override;
    double copy_gbs() const override { return machine_.copy_gbs; }
    double handoff_ms() const override { return machine_.handoff_ms; }
    double busy_handoff_ms() const override { return machine_.busy_handoff_ms; }
    double crowded_handoff_ms() const override { return machine_.crowded_handoff_ms; }
    // Profiles every batch size not yet measured, `rounds` times, the sizes taking turns, and
    // keeps each figure's smallest over the rounds. Other work on the machine only ever adds
    // time and comes in bursts of a fraction of a second to seconds: measured one after
    // another, a burst can fall on every iteration of one size and skew every plan using it;
    // taking turns spreads each size's rounds over the whole measurement.
    void prefetch(const TopologyDevice& device, std::vector<std::int64_t> batches) const override;
    // Measured once per batch: the net's step on `cores` one-thread devices at once (passing a
    // barrier after every step, as the engine's workers do) against one alone, interpolated
    // linearly for fewer busy devices; and on twice as many, beyond the proportional share,
    // for more. The median of three trials.
    double contention(int busy, int cores, std::int64_t batch) const override;
    // The optimizer's update on `busy` devices at once against one alone (beyond the
    // proportional share), measured once per count with the net's weights.
    double update_contention(int busy, int cores, std::int64_t batch) const override;
    // Measured: the in-process communicator's all-reduce at two sizes for each rank count and
    // algorithm (once each), as latency + bytes x time per byte.
    double cpu_all_reduce_ms(std::size_t bytes, int ranks, ReduceAlgorithm algorithm) const override;
    // How many profiles were taken (each distinct thread count and batch once).
    std::size_t profiles_taken() const;

    // The machine figures measured so far, to print beside a plan: whoever reads a prediction
    // can see what it rests on.
    struct Calibration {
        struct Profile {
            int threads = 0;
            std::int64_t batch = 0;
            double step_ms = 0;
        };
        struct Contention {
            int cores = 0;
            std::int64_t batch = 0;
            double all = 1;   // a step with every core busy
            double over = 1;  // twice as many busy as cores, beyond the proportional share
        };
        struct Update {
            int busy = 0;          // devices updating at once
            double slowdown = 1;   // against one alone, beyond the proportional share
        };
        struct AllReduce {
            int ranks = 0;
            ReduceAlgorithm algorithm = ReduceAlgorithm::ring;
            double latency_ms = 0, ms_per_mb = 0;
        };
        MachineFigures machine;
        std::vector<Profile> profiles;
        std::vector<Contention> contention;
        std::vector<AllReduce> all_reduce;
        std::vector<Update> updates;
    };
    Calibration calibration() const;

private:
    const NetProfile& profile(const TopologyDevice& device, std::int64_t batch) const;

    NetShapes shapes_;
    bool momentum_;
    Profiler profiler_;
    MachineFigures machine_;
    int rounds_;
    mutable std::mutex mutex_;
    mutable std::map<std::pair<int, std::int64_t>, NetProfile> cache_;
    // How much slower a step runs with every core busy, and with twice as many busy threads
    // beyond the proportional share; per (cores, batch), measured once.
    struct Slowdowns {
        double all = 1, over = 1;
    };
    const Slowdowns& slowdowns(int cores, std::int64_t batch) const;
    mutable std::map<std::pair<int, std::int64_t>, Slowdowns> slowdowns_;
    mutable std::map<int, double> update_slowdowns_;  // per busy devices
    mutable std::map<std::pair<int, ReduceAlgorithm>, std::pair<double, double>> all_reduce_;  // ms, ms per byte
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
// All of the above for a machine of `cores` cores.
MachineFigures measure_machine_figures(int cores);
// The in-process communicator's all-reduce of `bytes` among `ranks` threads: the median wall
// time of a few calls (ms).
double measure_all_reduce_ms(std::size_t bytes, int ranks, ReduceAlgorithm algorithm);
// How much slower SGD's update of `bytes` of weights (with a momentum buffer or not) runs on
// `threads` one-thread devices at the same moment than on one alone: memory-bound, it is
// slowed far more by its neighbours than a convolution is.
double measure_update_slowdown(std::size_t bytes, int threads, bool momentum);

}  // namespace tandem

// The simulator and the engine run the same stage programs: for several layouts, one training
// step's trace from each holds the same ops per device in the same order, the same buckets on
// each lane, and both match the program (parallel/program.h).
#include <gtest/gtest.h>

#include <set>

#include "device/cpu/cpu_device.h"
#include "engine/engine.h"
#include "io/trace.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "plan/cost_model.h"
#include "plan/simulator.h"
#include "support/branch_net.h"
#include "support/cpu_topology.h"
#include "support/toy_batch.h"

namespace tandem::test {
namespace {

std::shared_ptr<Sequential> shape_net() {
    Conv2dOptions c;
    c.in_channels = 1, c.out_channels = 4, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    return std::make_shared<Sequential>(std::vector<LayerPtr>{
        std::make_shared<Conv2d>(c), std::make_shared<ReLU>(), std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{4 * 8 * 8, 16, true, "kaiming"}),
        std::make_shared<ReLU>(), std::make_shared<Linear>(LinearOptions{16, 3, true, "kaiming"})});
}

// The net's shapes with made-up times: the simulator's programs depend on the layers' sizes
// (buckets, hand-offs), not on how long they take.
class ShapeCosts final : public CostModel {
public:
    explicit ShapeCosts(NetShapes shapes) : shapes_(std::move(shapes)) {}
    std::vector<LayerCost> layer_costs(const TopologyDevice&, std::int64_t batch) const override {
        std::vector<LayerCost> costs;
        const auto n = static_cast<std::size_t>(batch);
        for (const LayerShape& l : shapes_.layers) {
            LayerCost c;
            c.name = l.name;
            c.forward_ms = 0.1 * double(batch), c.backward_ms = 0.2 * double(batch);
            c.parameter_bytes = l.parameter_bytes,
            c.parameter_tensor_bytes = l.parameter_tensor_bytes;
            c.input_bytes = l.input_bytes * n, c.output_bytes = l.output_bytes * n;
            costs.push_back(c);
        }
        return costs;
    }
    double loss_ms(const TopologyDevice&, std::int64_t) const override { return 0.05; }
    double update_ms(const TopologyDevice&, std::int64_t, std::size_t, std::size_t) const override {
        return 0.1;
    }
    double copy_gbs() const override { return 10; }
    double handoff_ms() const override { return 0.01; }

private:
    NetShapes shapes_;
};

std::int64_t int_arg(const TraceEvent& e, const std::string& key) {
    for (const auto& a : e.args)
        if (a.key == key) return std::get<std::int64_t>(a.value);
    return -1;
}

// "forward 2", "optimizer", ...: the spans of program ops on `track`, in the order they ran.
std::vector<std::string> op_spans(const std::vector<TraceEvent>& events, const std::string& track) {
    static const std::set<std::string> names = [] {
        std::set<std::string> s;
        for (int k = 0; k <= static_cast<int>(OpKind::fold_batch_norm); ++k)
            s.insert(std::string(op_name(static_cast<OpKind>(k))));
        return s;
    }();
    // A track's spans are recorded as they end, one after another: in the order they ran.
    std::vector<const TraceEvent*> spans;
    for (const auto& e : events)
        if (e.track == track && names.count(e.name)) spans.push_back(&e);
    std::vector<std::string> out;
    for (const TraceEvent* e : spans) {
        const std::int64_t m = int_arg(*e, "micro_batch");
        out.push_back(e->name + (m >= 0 ? " " + std::to_string(m) : ""));
    }
    return out;
}

// The bytes of each all-reduce on the lane of `track`, in order.
std::vector<std::int64_t> lane_buckets(const std::vector<TraceEvent>& events,
                                       const std::string& track) {
    std::vector<std::int64_t> out;
    for (const auto& e : events)
        if (e.track == track + " all-reduce" && e.name == "all-reduce")
            out.push_back(int_arg(e, "bytes"));
    return out;
}

// The bytes of each receive span on `track`, in order: what crossed each edge.
std::vector<std::int64_t> received_bytes(const std::vector<TraceEvent>& events,
                                         const std::string& track) {
    std::vector<std::int64_t> out;
    for (const auto& e : events)
        if (e.track == track && (e.name == op_name(OpKind::receive_activation) ||
                                 e.name == op_name(OpKind::receive_gradient)))
            out.push_back(int_arg(e, "bytes"));
    return out;
}

std::vector<std::int64_t> program_received_bytes(const DeviceProgram& program) {
    std::vector<std::int64_t> out;
    for (const Op& op : program.ops)
        if (op.kind == OpKind::receive_activation || op.kind == OpKind::receive_gradient)
            out.push_back(static_cast<std::int64_t>(op.bytes));
    return out;
}

// What the program says the trace holds: its traced ops, a backward in parts as one span.
std::vector<std::string> program_spans(const DeviceProgram& program) {
    std::size_t stage_end = 0;
    for (const Op& op : program.ops)
        if (op.kind == OpKind::forward) stage_end = op.layer_end;
    std::vector<std::string> out;
    for (const Op& op : program.ops) {
        if (!op_traced(op.kind) || op.kind == OpKind::barrier) continue;
        if (op.kind == OpKind::all_reduce && op.on_lane) continue;  // on the lane's track
        if (op.kind == OpKind::backward && op.layer_end != stage_end)
            continue;  // a later part of one
        out.push_back(std::string(op_name(op.kind)) +
                      (op.micro_batch >= 0 ? " " + std::to_string(op.micro_batch) : ""));
    }
    return out;
}

// Device d's trace from the engine (on `engine_track`) and the simulator holds the program's
// ops in its order, and the same buckets on its lane.
void expect_same_ops(const std::vector<TraceEvent>& engine_events, const std::string& engine_track,
                     const Simulation& sim, std::size_t d, const DeviceProgram& program,
                     const std::string& what) {
    const std::string& sim_track = sim.devices[d].name;
    const auto want = program_spans(program);
    EXPECT_EQ(op_spans(engine_events, engine_track), want) << what << ", engine, device " << d;
    EXPECT_EQ(op_spans(sim.events, sim_track), want) << what << ", simulator, device " << d;
    EXPECT_EQ(lane_buckets(engine_events, engine_track), lane_buckets(sim.events, sim_track))
        << what << ", buckets on the lane of device " << d;
}

struct EngineCase {
    int groups, stages, micro;
    PipelineSchedule schedule;
    bool recompute, overlap;
    std::size_t bucket_bytes;
};

TEST(SimulatorAndEngine, RunTheSameOpsOnEveryDevice) {
    const std::vector<EngineCase> layouts{
        {1, 1, 2, PipelineSchedule::gpipe, false, true, 25 << 20},
        {1, 2, 3, PipelineSchedule::one_f_one_b, false, true, 25 << 20},
        {1, 3, 4, PipelineSchedule::one_f_one_b, true, true, 25 << 20},
        {2, 1, 2, PipelineSchedule::gpipe, false, true,
         100},  // a bucket per tensor, during backward
        {2, 2, 4, PipelineSchedule::one_f_one_b, true, true, 2000},
        {2, 2, 2, PipelineSchedule::gpipe, false, false,
         2000},  // all-reduces after backward, by the workers
    };
    const Shape sample{1, 8, 8};
    for (const EngineCase& l : layouts) {
        const std::string what =
            std::to_string(l.groups) + "x" + std::to_string(l.stages) + "x" +
            std::to_string(l.micro) + " " + std::string(pipeline_schedule_name(l.schedule)) +
            (l.recompute ? " recompute" : "") + (l.overlap ? "" : " no overlap");
        const std::int64_t batch = 4 * l.groups * l.micro;
        const std::vector<std::size_t> cuts = l.stages == 1   ? std::vector<std::size_t>{}
                                              : l.stages == 2 ? std::vector<std::size_t>{3}
                                                              : std::vector<std::size_t>{2, 4};
        EngineOptions o;
        o.net = shape_net();
        for (int i = 0; i < l.groups * l.stages; ++i)
            o.devices.push_back(
                std::make_shared<CpuDevice>(i, CpuDeviceOptions{std::size_t(1) << 30, 1}));
        o.optimizer.sgd = SgdOptions{0.05f, 0.9f, 0.f, 0.f, false};
        o.layout = Layout::channels_last;
        o.parallel.groups = l.groups, o.parallel.stages = l.stages,
        o.parallel.micro_batches = l.micro;
        o.parallel.pipeline = l.schedule;
        o.parallel.cuts = cuts;
        if (l.recompute) o.parallel.recompute = {true};
        o.parallel.overlap_backward = l.overlap;
        o.parallel.bucket_bytes = l.bucket_bytes;
        o.trace = std::make_shared<Trace>();
        Engine engine(o);
        const Batch b = make_batch(0, batch);
        engine.step(b.images, b.labels);

        Plan plan;
        plan.groups = l.groups, plan.stages = l.stages, plan.micro_batches = l.micro;
        plan.schedule = l.schedule, plan.recompute = l.recompute, plan.cuts = cuts,
        plan.batch = batch;
        plan.overlap_backward = l.overlap, plan.bucket_bytes = l.bucket_bytes;
        const Topology topology = cpu_topology(l.groups * l.stages, 2);  // this machine's two cores
        const Simulation sim =
            simulate(plan, topology, ShapeCosts(net_shapes(*shape_net(), sample)), true);

        ProgramSpec spec;
        spec.parallel = plan.parallel_options();
        spec.bounds = {0};
        for (std::size_t c : cuts) spec.bounds.push_back(c);
        spec.bounds.push_back(engine.net().size());
        for (std::size_t i = 0; i < engine.net().size(); ++i)
            spec.parameter_bytes.push_back(parameter_tensor_bytes(engine.net().at(i)));
        spec.replicas = l.groups;
        const auto programs = build_programs(spec);

        const auto engine_events = o.trace->events();
        for (int g = 0; g < l.groups; ++g)
            for (int s = 0; s < l.stages; ++s) {
                const auto d = static_cast<std::size_t>(g * l.stages + s);
                const std::string sim_track = sim.devices[d].name;
                expect_same_ops(engine_events, engine.stage_device(g, s).name(), sim, d,
                                programs[d], what);
                if (l.groups > 1 && l.overlap) {
                    EXPECT_FALSE(lane_buckets(sim.events, sim_track).empty()) << what;
                }
            }
    }
}

// A graph net's branches on devices of their own (parallel.placement): the simulator plays the
// engine's programs over the placement's stage graph, op for op, and its edges carry the bytes
// the engine's transfers move.
TEST(SimulatorAndEngine, RunTheSameOpsForAPlacement) {
    struct PlacementCase {
        const Placement* placement;
        int groups, micro;
        PipelineSchedule schedule;
        bool recompute, overlap;
    };
    const std::vector<PlacementCase> layouts{
        {&kFourStages, 1, 2, PipelineSchedule::gpipe, false, true},
        {&kFourStages, 1, 3, PipelineSchedule::one_f_one_b, true, true},
        {&kThreeStages, 2, 2, PipelineSchedule::one_f_one_b, false, true},
        {&kThreeStages, 2, 1, PipelineSchedule::gpipe, false, false},
    };
    const Shape sample{1, 8, 8};
    for (const PlacementCase& l : layouts) {
        const int stages = static_cast<int>(l.placement->size());
        const std::string what =
            std::to_string(l.groups) + "x" + std::to_string(stages) + "x" +
            std::to_string(l.micro) + " " + std::string(pipeline_schedule_name(l.schedule)) +
            (l.recompute ? " recompute" : "") + (l.overlap ? "" : " no overlap");
        const std::int64_t batch = 4 * l.groups * l.micro;
        EngineOptions o;
        o.net = branch_net();
        for (int i = 0; i < l.groups * stages; ++i)
            o.devices.push_back(
                std::make_shared<CpuDevice>(i, CpuDeviceOptions{std::size_t(1) << 30, 1}));
        o.optimizer.sgd = SgdOptions{0.05f, 0.9f, 0.f, 0.f, false};
        o.parallel.groups = l.groups, o.parallel.stages = stages,
        o.parallel.micro_batches = l.micro;
        o.parallel.pipeline = l.schedule;
        o.parallel.placement = *l.placement;
        if (l.recompute) o.parallel.recompute = {true};
        o.parallel.overlap_backward = l.overlap;
        o.parallel.bucket_bytes = 300;
        o.trace = std::make_shared<Trace>();
        Engine engine(o);
        const Batch b = make_batch(0, batch);
        engine.step(b.images, b.labels);

        auto net = branch_net();
        const UnitPlacement placed = place_units(*net, *l.placement);
        const NetShapes shapes = net_shapes(*net, sample, placed);
        Plan plan;
        plan.groups = l.groups, plan.stages = stages, plan.micro_batches = l.micro;
        plan.schedule = l.schedule, plan.recompute = l.recompute, plan.batch = batch;
        plan.overlap_backward = l.overlap, plan.bucket_bytes = 300;
        plan.graph = placement_graph(placed, shapes, plan.micro_batch());
        const Topology topology = cpu_topology(l.groups * stages, 2);
        const Simulation sim = simulate(plan, topology, ShapeCosts(shapes), true);

        ProgramSpec spec;
        spec.parallel = plan.parallel_options();
        spec.graph = plan.graph;
        spec.parameter_bytes = placed.parameter_bytes(*net);
        spec.replicas = l.groups;
        const auto programs = build_programs(spec);

        const auto engine_events = o.trace->events();
        for (int g = 0; g < l.groups; ++g)
            for (int s = 0; s < stages; ++s) {
                const auto d = static_cast<std::size_t>(g * stages + s);
                const std::string engine_track = engine.stage_device(g, s).name();
                expect_same_ops(engine_events, engine_track, sim, d, programs[d], what);
                const auto received = received_bytes(engine_events, engine_track);
                EXPECT_EQ(received, program_received_bytes(programs[d]))
                    << what << ", the bytes device " << d << " received";
                EXPECT_FALSE(received.empty())
                    << what << ": every stage receives (activations or gradients)";
            }
    }
}

}  // namespace
}  // namespace tandem::test

// StepSimulator::build_queues: each device's queue of items, one per op of its stage program
// (parallel/program.h) as the engine runs it, each with its time from the cost model, the
// signals it waits for and sets (one per edge of the stage graph, direction and micro-batch,
// as the engine's StepBoard keys its tensors), and the memory it holds.
#include <algorithm>
#include <map>
#include <set>

#include "base/error.h"
#include "optim/loss_scaler.h"
#include "parallel/program.h"
#include "plan/simulator_internal.h"

namespace tandem::simulation {

void StepSimulator::build_queues() {
    const Plan& p = plan_;
    const std::int64_t micro = p.micro_batch();
    std::vector<std::vector<LayerCost>> device_costs;
    for (int d = 0; d < count_; ++d)
        device_costs.push_back(
            costs_.layer_costs(topology_.device(device_of_[static_cast<std::size_t>(d)]), micro));
    const std::vector<LayerCost>& costs0 = device_costs.front();

    // The programs the engine runs for this plan: what every device's queue is made of.
    ProgramSpec spec;
    spec.parallel = p.parallel_options();
    for (const LayerCost& c : costs0) spec.parameter_bytes.push_back(c.tensor_bytes());
    spec.replicas = p.groups;
    // The engine's default loss scaling for the precision (dynamic in fp16): its unscale pass.
    spec.unscale_gradients =
        resolve_loss_scale(LossScaleMode::automatic, costs_.precision()) != LossScaleMode::none;
    if (p.graph.stages.empty()) {
        std::vector<std::size_t> bounds{0};
        for (std::size_t c : p.cuts) bounds.push_back(c);
        bounds.push_back(costs0.size());
        TANDEM_CHECK_AS(ConfigError, static_cast<int>(p.cuts.size()) == p.stages - 1)
            << "plan " << p.label() << " has " << p.cuts.size() << " cuts for " << p.stages
            << " stages";
        for (std::size_t i = 1; i < bounds.size(); ++i)
            TANDEM_CHECK_AS(ConfigError, bounds[i - 1] < bounds[i])
                << "plan " << p.label() << ": cuts must increase within 1.." << costs0.size() - 1;
        spec.bounds = bounds;
        spec.boundary_bytes.push_back(costs0.front().input_bytes);
        for (std::size_t s = 1; s < bounds.size(); ++s)
            spec.boundary_bytes.push_back(costs0[bounds[s] - 1].output_bytes);
    } else {
        TANDEM_CHECK_AS(ConfigError, p.cuts.empty())
            << "plan " << p.label() << " gives cuts and a stage graph: one or the other";
        spec.graph = p.graph;
    }
    const std::vector<DeviceProgram> programs = build_programs(spec);  // checks the graph
    graph_ = program_stage_graph(spec);
    const int loss_stage = graph_.loss_stage();

    // One collective per stage and bucket, over that stage's copy in every group.
    std::map<std::pair<int, int>, int> collective_of;  // (stage, bucket) -> index
    if (reduces_gradients(spec.parallel, spec.replicas))
        for (int s = 0; s < p.stages; ++s) {
            const auto buckets = stage_buckets(spec, s);
            for (std::size_t b = 0; b < buckets.size(); ++b) {
                Collective c;
                for (int g = 0; g < p.groups; ++g) c.members.push_back(g * p.stages + s);
                c.bytes = buckets[b].bytes;
                c.stage = s, c.bucket = static_cast<int>(b);
                collective_of[{s, static_cast<int>(b)}] = static_cast<int>(collectives_.size());
                collectives_.push_back(c);
            }
        }

    queues_.assign(static_cast<std::size_t>(count_), {});
    for (int d = 0; d < count_; ++d) {
        const int g = d / p.stages, s = d % p.stages;
        const TopologyDevice& device = topology_.device(device_of_[static_cast<std::size_t>(d)]);
        const std::vector<LayerCost>& costs = device_costs[static_cast<std::size_t>(d)];
        const std::size_t begin = graph_.stage(s).layer_begin, end = graph_.stage(s).layer_end;
        const StageCosts table(costs);
        const bool last = s == loss_stage;
        const StageMemory one = table.memory(begin, end, 1, false);
        const std::size_t input = costs[begin].input_bytes, output = costs[end - 1].output_bytes;
        // A micro-batch in flight keeps its layers' inputs and saved tensors and, since the
        // last layer keeps its own output for backward (ReLU does), the stage's output.
        const std::size_t kept = p.recompute ? input : one.activations + output;
        SimulatedDevice sd;
        sd.name = device.name;
        sd.group = g, sd.stage = s;
        sd.memory = one;
        sd.cap = device.memory_bytes;
        sim_.devices.push_back(sd);
        static_bytes_.push_back(one.weights + one.gradients + one.optimizer +
                                device.kernel_reserve_bytes());
        std::size_t tensors = 0;
        for (std::size_t i = begin; i < end; ++i) tensors += costs[i].tensor_bytes().size();
        parameter_tensors_.push_back(tensors);
        // What one layer needs while it runs (its output or gradients, scratch): the largest.
        std::size_t workspace = 0;
        for (std::size_t i = begin; i < end; ++i)
            workspace = std::max(workspace, costs[i].workspace_bytes);
        // From a gradient's arrival to the end of its backward: the gradient received from a
        // reader of the output, and what recomputation rebuilds of one micro-batch (and its
        // output).
        const std::size_t backward_transient =
            (p.recompute ? one.activations - input + output : 0) + (last ? 0 : output) + workspace;
        // A CPU worker copies what it receives itself (a stage reading the batch its slice of the
        // images too); a GPU's copy engine does it beside.
        auto copy_ms = [&](std::size_t bytes) {
            return device.cpu ? costs_.cpu_copy_ms(bytes) : 0.0;
        };
        auto layers_ms = [&](std::size_t from, std::size_t to, bool backward) {
            double ms = 0;
            for (std::size_t i = from; i < to; ++i)
                ms += backward ? costs[i].backward_ms : costs[i].forward_ms;
            return ms;
        };
        // Activations other micro-batches keep on this device take the last-level cache: what
        // of an op's own activations no longer fits goes out to memory and comes back (written
        // in forward to lines not in the caches, read back in backward), about a copy's traffic.
        // The profile ran one micro-batch at a time and timed only what did not fit beside
        // nothing else; GPipe's many in flight pay the rest, 1F1B's few mostly not.
        const double cache = device.cpu ? double(costs_.cache_bytes()) : 0.0;
        std::set<int> in_flight;
        auto spilled_ms = [&](const Op& o) {
            const double own =
                double(table.memory(o.layer_begin, o.layer_end, 1, false).activations);
            if (cache <= 0 || own <= 0) return 0.0;
            const auto out_of_cache = [&](double beside) {
                return std::clamp((beside + own - cache) / own, 0.0, 1.0);
            };
            const std::size_t others = in_flight.size() - in_flight.count(o.micro_batch);
            return (out_of_cache(double(others) * double(kept)) - out_of_cache(0)) *
                   copy_ms(static_cast<std::size_t>(own));
        };
        auto& q = queues_[static_cast<std::size_t>(d)];
        for (const Op& op : programs[static_cast<std::size_t>(d)].ops) {
            if (op.kind == OpKind::barrier) break;  // the update phase: start_updates()
            if (op.kind == OpKind::send_activation || op.kind == OpKind::send_gradient) {
                // A hand-off at the end of the op before it. After all-reduces posted to the
                // lane it is an item of its own, taking no time and no span, so that the
                // collectives, posted first, reserve the channels first, as in the program.
                const int direction = op.kind == OpKind::send_activation ? 0 : 1;
                TANDEM_CHECK(!q.empty()) << "a send before any op";
                if (q.back().kind != Item::compute) {
                    Item hand_off;
                    hand_off.name = std::string(op_name(op.kind)),
                    hand_off.category = std::string(op_category(op.kind));
                    hand_off.micro = op.micro_batch;
                    hand_off.opens_span = hand_off.closes_span = false;
                    q.push_back(std::move(hand_off));
                }
                q.back().sends.push_back(
                    {signal(direction, g, op.edge, op.micro_batch), op.peer, op.bytes});
                continue;
            }
            if (op.kind == OpKind::wait_lane) continue;  // compute_phase_done() waits for the lanes
            TANDEM_CHECK(op.micro_batch != kEveryMicroBatch)
                << "the simulator has no model of op '" << op_name(op.kind)
                << "' over every micro-batch at once";
            Item it;
            it.name = std::string(op_name(op.kind)),
            it.category = std::string(op_category(op.kind));
            it.micro = op.micro_batch;
            switch (op.kind) {
                case OpKind::load_input: it.work_ms = copy_ms(op.bytes); break;
                case OpKind::receive_activation:
                    it.wait = signal(0, g, op.edge, op.micro_batch);
                    it.work_ms = copy_ms(op.bytes);
                    break;
                case OpKind::forward:
                    it.work_ms = layers_ms(op.layer_begin, op.layer_end, false) + spilled_ms(op);
                    if (op.layer_begin == begin) in_flight.insert(op.micro_batch);
                    it.hold = kept;
                    it.transient = workspace;
                    break;
                // The cost model's loss time covers its forward and its gradient both.
                case OpKind::loss: it.work_ms = costs_.loss_ms(device, micro); break;
                case OpKind::loss_gradient: it.transient = backward_transient; break;
                // Gradients from several readers are added up as they come (Stage::run): an
                // elementwise add beside the copy, not modelled apart.
                case OpKind::receive_gradient:
                    it.wait = signal(1, g, op.edge, op.micro_batch);
                    it.work_ms = last ? 0 : copy_ms(op.bytes);
                    it.transient = backward_transient;
                    break;
                case OpKind::recompute:
                    it.work_ms = layers_ms(op.layer_begin, op.layer_end, false);
                    it.transient = backward_transient;
                    break;
                case OpKind::backward:
                    it.work_ms = layers_ms(op.layer_begin, op.layer_end, true) + spilled_ms(op);
                    if (op.layer_begin == begin) in_flight.erase(op.micro_batch);
                    it.transient = backward_transient;
                    it.opens_span = op.layer_end == end;
                    it.closes_span = op.layer_begin == begin;
                    if (it.closes_span)
                        it.release = kept;  // the micro-batch's activations are spent
                    break;
                // A pass over the stage's gradients (CPU workers at their copy rate; on a GPU
                // it is a small reduction beside the step, not modelled).
                case OpKind::unscale_gradients:
                case OpKind::gradient_norm:
                    it.work_ms = copy_ms(sim_.devices.back().memory.gradients);
                    break;
                case OpKind::all_reduce:
                    it.kind = Item::reduce;
                    it.collective = collective_of.at({s, op.bucket});
                    break;
                default:
                    TANDEM_THROW(Error)
                        << "the simulator has no model of op '" << op_name(op.kind) << "'";
            }
            q.push_back(std::move(it));
        }
    }
}

}  // namespace tandem::simulation

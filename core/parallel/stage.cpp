#include "parallel/stage.h"

#include <algorithm>
#include <optional>

#include "base/error.h"
#include "device/device.h"
#include "io/trace.h"
#include "layers/batch_norm2d.h"
#include "layers/kernel_cache.h"
#include "parallel/comm_inproc.h"
#include "parallel/transfer.h"

namespace tandem {
namespace {

// Every span of a step says which step it belongs to and whether it trained or evaluated.
TraceSpan& step_args(TraceSpan& span, const StepPlan& plan) {
    return span.arg("step", plan.step).arg("phase", plan.mode == Mode::train ? "train" : "evaluate");
}

// sum(slots[begin, end)) in the canonical pairwise order (the in-process tree all-reduce's:
// split at the largest power of two below the count), accumulated into slots[begin].
void pairwise_sum(std::vector<std::vector<Tensor>>& slots, std::size_t begin, std::size_t end) {
    if (end - begin < 2) return;
    const std::size_t split = begin + canonical_tree_split(end - begin);
    pairwise_sum(slots, begin, split);
    pairwise_sum(slots, split, end);
    for (std::size_t i = 0; i < slots[begin].size(); ++i)
        tensor_ops(slots[begin][i].device()).accumulate(slots[begin][i], slots[split][i]);
}

// Every batch-norm layer under `layer`, depth first: the same order in every replica.
void collect_batch_norms(Layer& layer, std::vector<BatchNorm2d*>& out) {
    if (auto* bn = dynamic_cast<BatchNorm2d*>(&layer)) out.push_back(bn);
    for (Layer* child : layer.children()) collect_batch_norms(*child, out);
}

// Gradients in backward order (last layer first), as the buckets take them.
std::vector<std::pair<std::string, Tensor>> gradients_last_first(const std::vector<NamedParameter>& params) {
    std::vector<std::pair<std::string, Tensor>> grads;
    for (auto it = params.rbegin(); it != params.rend(); ++it) grads.emplace_back(it->name, it->parameter->grad);
    return grads;
}

}  // namespace

Stage::Stage(StageParts parts) : parts_(std::move(parts)) {
    Sequential& net = *parts_.net;
    for (std::size_t i = parts_.begin; i < parts_.end; ++i) {
        if (!parts_.units) {
            layers_.emplace_back(net.at(i).name(), &net.at(i));
        } else {
            const NetUnit& unit = parts_.units->units[i];
            layers_.emplace_back(unit.name, &unit_layer(net, unit));
        }
    }
    if (parts_.units) part_ = std::make_unique<GraphPart>(parts_.units->stage_part(net, parts_.stage));
    for (auto& [name, layer] : layers_) {
        layer->to(*parts_.device);
        for (auto& np : named_parameters(*layer)) parameters_.push_back({name + "." + np.name, np.parameter});
    }
    if (parts_.replicas == 1) return;
    const ParallelOptions& p = *parts_.parallel;
    buckets_ = std::make_unique<GradientBuckets>(gradients_last_first(parameters_), p.bucket_bytes);
    if (reduces_during_backward(p, parts_.replicas))
        lane_ = std::make_unique<ReduceLane>(parts_.device->name() + " all-reduce");
    if (p.average_every == 0) return;
    AveragingParts a;
    a.parallel = parts_.parallel;
    a.rank = parts_.rank, a.replicas = parts_.replicas;
    a.communicator = parts_.communicator;
    a.device = parts_.device;
    a.parameters = parameters_;
    for (auto& [name, layer] : layers_)
        for (auto& b : named_buffers(*layer)) a.buffers.push_back({name + "." + b.name, b.parameter});
    a.optimizer = parts_.optimizer;
    average_ = std::make_unique<ModelAverage>(std::move(a));
}

Stage::~Stage() = default;

// What the stage keeps between the ops of one run, per micro-batch.
struct Stage::Run {
    Run(StepPlan& plan, std::size_t micro_batches)
        : plan(plan), tapes(micro_batches), inputs(micro_batches), outputs(micro_batches), labels(micro_batches),
          gradients(micro_batches), sends_left(micro_batches, 0) {}
    // What moves along `edge` for micro-batch mi: the stage's output or its gradient (a chain's
    // stage has one of each), or the edge's value or its gradient.
    Tensor& output(const Stage& stage, std::size_t mi, int edge) {
        return stage.part_ ? values[mi][stage.edge_value(edge)] : outputs[mi];
    }
    Tensor& gradient(const Stage& stage, std::size_t mi, int edge) {
        return stage.part_ ? value_gradients[mi][stage.edge_value(edge)] : gradients[mi];
    }
    StepPlan& plan;
    std::vector<Tape> tapes;
    std::vector<Pass> passes;         // one per micro-batch, on the tapes
    std::vector<Pass*> every_pass;
    std::vector<Tensor> inputs;       // the stage's input, until forward (or a recompute) is done with it
    std::vector<Tensor> outputs;      // the stage's output, until the loss or the send takes it
    std::vector<Tensor> labels;       // the loss stage: each micro-batch's labels, for the loss's gradient
    std::vector<Tensor> gradients;    // flowing down through backward, until sent
    // A placement of units, per micro-batch: every value (unit_placement.h's numbering) the
    // stage holds, and their gradients, summed over the readers, until sent or used.
    std::vector<std::vector<Tensor>> values, value_gradients;
    // Per micro-batch, the activation sends still to come: the last one lets go of the output
    // (unless the loss still reads it), earlier ones post it and keep it for the next reader.
    std::vector<int> sends_left;
    bool computes_loss = false;
    std::vector<std::vector<Tensor>> stashed;  // deterministic mode: each micro-batch's gradients
    BatchStatistics* statistics = nullptr;     // deferred batch norm
    // A backward run in parts (buckets posted between them) is one span, from its first part
    // to its last.
    std::optional<TraceSpan> backward_span;
};

float Stage::loss_scale(const StepPlan& plan) const {
    // Model averaging: each replica follows its own shard's mean gradient.
    if (parts_.parallel->average_every == 0) return plan.loss_scale;
    const int m = plan.micro_batches, g = parts_.group;
    return 1.0f / static_cast<float>(plan.start((g + 1) * m) - plan.start(g * m));
}

void Stage::run(StepPlan& plan, const DeviceProgram& program) {
    const ParallelOptions& p = *parts_.parallel;
    Device& dev = *parts_.device;
    const int group = parts_.group, stage = parts_.stage, micro_batches = plan.micro_batches;
    const bool train = plan.mode == Mode::train;
    Trace* trace = parts_.trace;
    if (train) Optimizer::zero_grad(parameters_);
    // Model averaging's global model or centre: the weights every replica trains from.
    if (train && average_ && !average_->started()) average_->start();

    Run run(plan, static_cast<std::size_t>(micro_batches));
    if (train && !plan.statistics.empty())
        run.statistics = &plan.statistics[static_cast<std::size_t>(group * p.stages + stage)];
    // Synchronised batch norm: every batch-norm layer sums its statistics over the replicas.
    auto sum_over_replicas = [this, trace, &plan](std::vector<double>& values) {
        if (!parts_.communicator) return;
        TraceSpan span(trace, parts_.device->name(), "batch-norm statistics", "allreduce");
        step_args(span, plan);
        // In the device's memory, where the stage's communicator reduces (NCCL on GPUs).
        const std::vector<float> mine(values.begin(), values.end());
        Tensor buffer = Tensor::from_vector({std::int64_t(mine.size())}, *parts_.device, mine);
        parts_.communicator->all_reduce_sum(parts_.rank, static_cast<float*>(buffer.raw()), mine.size(),
                                            parts_.parallel->algorithm);
        const std::vector<float> sums = buffer.to_vector();
        values.assign(sums.begin(), sums.end());
    };
    bool sends_gradient = false;
    for (const Op& op : program.ops) {
        if (op.kind == OpKind::send_activation && op.micro_batch >= 0)
            ++run.sends_left[static_cast<std::size_t>(op.micro_batch)];
        run.computes_loss = run.computes_loss || op.kind == OpKind::loss;
        sends_gradient = sends_gradient || op.kind == OpKind::send_gradient;
    }
    if (part_) {
        run.values.assign(run.tapes.size(), std::vector<Tensor>(parts_.units->values));
        run.value_gradients = run.values;
    }
    run.passes.reserve(run.tapes.size());
    for (int m = 0; m < micro_batches; ++m) {
        const int k = group * micro_batches + m;
        Pass& pass = run.passes.emplace_back(Pass{dev, plan.mode, k, run.tapes[static_cast<std::size_t>(m)], plan.rng});
        pass.first_sample = plan.sample_offset + plan.start(k);
        pass.batch_statistics = run.statistics;
        pass.need_dx = sends_gradient;  // nobody reads the gradient of the images
        if (train && p.batch_norm == BatchNormMode::sync) pass.sum_over_replicas = sum_over_replicas;
        run.every_pass.push_back(&pass);
    }

    for (const Op& op : program.ops) {
        if (op.kind == OpKind::barrier) break;  // the rest runs once every stage is here
        const auto mi = static_cast<std::size_t>(std::max(op.micro_batch, 0));
        const int k = group * micro_batches + op.micro_batch;
        auto span = [&](std::optional<TraceSpan>& s) -> TraceSpan& {
            s.emplace(trace, dev.name(), op_name(op.kind), op_category(op.kind));
            if (op.micro_batch >= 0) s->arg("micro_batch", op.micro_batch);
            return step_args(*s, plan).arg("stage", stage);
        };
        std::optional<TraceSpan> traced;
        // What the peer handed over, once it is there (the wait is not the op's), onto this device.
        auto receive = [&](EdgeDirection direction) {
            Tensor t = plan.board.take(direction, group, op.edge, op.micro_batch);
            span(traced).arg("bytes", t.nbytes());
            return transfer(t, dev);
        };
        // A chain's stage, a range of a Sequential, takes one input tensor; a placement's, one
        // per edge (its value).
        auto take_input = [&](Tensor x) {
            if (part_) {
                run.values[mi][edge_value(op.edge)] = std::move(x);
                return;
            }
            TANDEM_CHECK_AS(ConfigError, !run.inputs[mi].defined())
                << "stage " << stage << " has a second input (edge " << op.edge << ") for micro-batch "
                << op.micro_batch << "; its layers, a range of a Sequential, take one";
            run.inputs[mi] = std::move(x);
        };
        // Gradients of an output from several readers (and the loss) add up, in program order:
        // the same sum on every run.
        auto add_gradient = [&](Tensor dy) {
            Tensor& sum = run.gradient(*this, mi, op.edge);
            if (part_) {
                add_in_layout(sum, dy, run.values[mi][edge_value(op.edge)], dev);
            } else if (!sum.defined()) {
                sum = std::move(dy);
            } else {
                tensor_ops(dev).accumulate(sum, dy);
            }
        };
        // Evaluation: a placement's stage lets go of a micro-batch's values once sent.
        auto done_with_values = [&] {
            if (part_ && !train) run.values[mi].assign(run.values[mi].size(), Tensor());
        };
        switch (op.kind) {
        case OpKind::load_input: {
            span(traced);
            Tensor x = transfer(plan.images.narrow_batch(plan.start(k), plan.count(k)), dev);
            take_input(x.shape().rank() == 4 && x.layout() != parts_.layout ? x.to_layout(parts_.layout) : x);
            break;
        }
        case OpKind::receive_activation: take_input(receive(EdgeDirection::forward)); break;
        case OpKind::forward:
        case OpKind::recompute:
            span(traced);
            part_ ? forward_units(run, op) : forward(run, op);
            break;
        case OpKind::loss:
            span(traced);
            // Labels go straight to the stage computing the loss.
            run.labels[mi] = transfer(plan.labels.narrow_batch(plan.start(k), plan.count(k)), dev);
            try {
                plan.sums[static_cast<std::size_t>(k)] =
                    parts_.loss->forward(run.output(*this, mi, op.edge), run.labels[mi], run.passes[mi]);
            } catch (Error& e) {
                // The kernel counts within the micro-batch: say where that is in the batch.
                e.add_context("in the loss of samples " + std::to_string(plan.start(k) + 1) + ".." +
                              std::to_string(plan.start(k + 1)) + " of the batch");
                throw;
            }
            if (!train) run.outputs[mi] = Tensor(), run.labels[mi] = Tensor(), done_with_values();
            break;
        case OpKind::send_activation:
            if (--run.sends_left[mi] == 0 && !run.computes_loss && !part_) {
                plan.board.put(EdgeDirection::forward, group, op.edge, op.micro_batch, std::move(run.outputs[mi]));
            } else {
                // A placement's values stay for backward (its layers read them).
                plan.board.put(EdgeDirection::forward, group, op.edge, op.micro_batch, run.output(*this, mi, op.edge));
                if (run.sends_left[mi] == 0 && !run.computes_loss) done_with_values();
            }
            break;
        case OpKind::loss_gradient:
            span(traced);
            add_gradient(parts_.loss->backward(run.output(*this, mi, op.edge), run.labels[mi], loss_scale(plan),
                                               run.passes[mi]));
            run.outputs[mi] = Tensor(), run.labels[mi] = Tensor();
            break;
        case OpKind::receive_gradient: add_gradient(receive(EdgeDirection::backward)); break;
        case OpKind::backward:
            if (op.layer_end == parts_.end) span(run.backward_span);
            part_ ? backward_units(run, op) : backward(run, op);
            if (op.layer_begin == parts_.begin) run.backward_span.reset();
            break;
        case OpKind::stash_gradients:
            span(traced);
            if (run.stashed.empty()) run.stashed.resize(run.tapes.size());
            for (auto& np : parameters_) {
                run.stashed[mi].push_back(np.parameter->grad.clone());
                tensor_ops(dev).fill(np.parameter->grad, 0.f);
            }
            break;
        case OpKind::send_gradient: {
            Tensor dx = std::move(run.gradient(*this, mi, op.edge));
            if (part_) {
                // Sent once per edge; no reader's gradient reached this input: zero.
                Tensor& x = run.values[mi][edge_value(op.edge)];
                if (!dx.defined()) {
                    dx = Tensor::empty(x.shape(), dev, DType::f32, x.layout());
                    tensor_ops(dev).fill(dx, 0.f);
                }
                run.gradient(*this, mi, op.edge) = Tensor(), x = Tensor();
            }
            plan.board.put(EdgeDirection::backward, group, op.edge, op.micro_batch, std::move(dx));
            break;
        }
        case OpKind::sum_gradients:
            span(traced);
            // The stage's gradients become the canonical sum of the micro-batches'.
            pairwise_sum(run.stashed, 0, run.stashed.size());
            for (std::size_t i = 0; i < parameters_.size(); ++i)
                tensor_ops(dev).copy(run.stashed.front()[i], parameters_[i].parameter->grad);
            break;
        case OpKind::all_reduce: {
            const auto bucket = static_cast<std::size_t>(op.bucket);
            if (op.on_lane) {
                lane_->post([this, bucket, step = plan.step] { all_reduce(bucket, lane_->name(), step); });
            } else {
                all_reduce(bucket, dev.name(), plan.step);
            }
            break;
        }
        case OpKind::wait_lane: lane_->wait(); break;
        case OpKind::gradient_norm: {
            span(traced);
            double squares = 0;
            for (auto& np : parameters_)
                if (np.parameter->grad.defined()) squares += tensor_ops(dev).sum_squares(np.parameter->grad);
            plan.gradient_squares[static_cast<std::size_t>(group * p.stages + stage)] = squares;
            break;
        }
        default: TANDEM_THROW(Error) << "op '" << op_name(op.kind) << "' cannot run before the step's barrier";
        }
    }
}

void Stage::forward(Run& run, const Op& op) {
    const std::size_t mi = static_cast<std::size_t>(std::max(op.micro_batch, 0));
    Sequential& net = *parts_.net;
    if (op.micro_batch == kEveryMicroBatch) {
        run.outputs = net.forward_many_range(run.inputs, run.every_pass, op.layer_begin, op.layer_end);
        run.inputs.assign(run.inputs.size(), Tensor());
        return;
    }
    Pass& pass = run.passes[mi];
    if (op.kind == OpKind::recompute) {
        // The forward again, keeping what backward needs; not counted again in running statistics.
        pass.recomputing = true;
        net.forward_range(run.inputs[mi], pass, op.layer_begin, op.layer_end);
        pass.recomputing = false;
        run.inputs[mi] = Tensor();
        return;
    }
    if (op.keeps_activations) {
        run.outputs[mi] = net.forward_range(run.inputs[mi], pass, op.layer_begin, op.layer_end);
        run.inputs[mi] = Tensor();
        return;
    }
    // Without keeping what backward needs (the input stays for the recompute op).
    Tape scratch;
    Pass keep_nothing{pass.device, Mode::train, pass.micro_batch, scratch, pass.rng_key};
    keep_nothing.first_sample = pass.first_sample;
    keep_nothing.batch_statistics = pass.batch_statistics;
    run.outputs[mi] = net.forward_range(run.inputs[mi], keep_nothing, op.layer_begin, op.layer_end);
}

void Stage::backward(Run& run, const Op& op) {
    Sequential& net = *parts_.net;
    if (op.micro_batch == kEveryMicroBatch) {
        run.gradients = net.backward_many_range(run.gradients, run.every_pass, parts_.begin, parts_.end);
        return;
    }
    const auto mi = static_cast<std::size_t>(op.micro_batch);
    run.gradients[mi] =
        net.backward_part(run.gradients[mi], run.passes[mi], parts_.begin, parts_.end, op.layer_begin, op.layer_end);
    // What forward kept for this micro-batch is spent: free it now, so a stage holds only the
    // micro-batches in flight (1F1B's bound), not every one until the step ends.
    if (op.layer_begin == parts_.begin) run.tapes[mi].clear();
}

void Stage::forward_units(Run& run, const Op& op) {
    const std::size_t low = op.layer_begin - parts_.begin, high = op.layer_end - parts_.begin;
    if (op.micro_batch == kEveryMicroBatch) {
        part_->forward_many(run.values, run.every_pass);
        return;
    }
    const auto mi = static_cast<std::size_t>(op.micro_batch);
    Pass& pass = run.passes[mi];
    if (op.kind == OpKind::recompute) {
        // The forward again, keeping what backward needs; not counted again in running statistics.
        pass.recomputing = true;
        part_->forward(run.values[mi], pass, low, high);
        pass.recomputing = false;
        return;
    }
    if (op.keeps_activations) {
        part_->forward(run.values[mi], pass, low, high);
        return;
    }
    // Without keeping what backward needs (the inputs stay among the values for the recompute).
    Tape scratch;
    Pass keep_nothing{pass.device, Mode::train, pass.micro_batch, scratch, pass.rng_key};
    keep_nothing.first_sample = pass.first_sample;
    keep_nothing.batch_statistics = pass.batch_statistics;
    part_->forward(run.values[mi], keep_nothing, low, high);
}

void Stage::backward_units(Run& run, const Op& op) {
    // The values the stage's units made are spent once its backward is done; the inputs
    // stay until their gradients are sent.
    auto let_go_of_made = [this](std::vector<Tensor>& values) {
        for (std::size_t i = parts_.begin; i < parts_.end; ++i) values[parts_.units->units[i].value] = Tensor();
    };
    if (op.micro_batch == kEveryMicroBatch) {
        part_->backward_many(run.values, run.value_gradients, run.every_pass);
        for (auto& values : run.values) let_go_of_made(values);
        return;
    }
    const auto mi = static_cast<std::size_t>(op.micro_batch);
    part_->backward(run.values[mi], run.value_gradients[mi], run.passes[mi], op.layer_begin - parts_.begin,
                    op.layer_end - parts_.begin);
    if (op.layer_begin == parts_.begin) {
        run.tapes[mi].clear();
        let_go_of_made(run.values[mi]);
    }
}

void Stage::all_reduce(std::size_t bucket, const std::string& track, std::int64_t step) {
    TraceSpan span(parts_.trace, track, op_name(OpKind::all_reduce), op_category(OpKind::all_reduce));
    span.arg("step", step).arg("phase", "train");
    span.arg("bucket", bucket).arg("bytes", buckets_->bucket(bucket).flat.nbytes()).arg("stage", parts_.stage);
    buckets_->all_reduce(bucket, *parts_.communicator, parts_.rank, parts_.parallel->algorithm);
}

void Stage::drain_lane() noexcept {
    if (lane_) lane_->drain();
}

void Stage::update(const StepPlan& plan, const DeviceProgram& program, float lr, const std::vector<Stage*>& copies) {
    const auto barrier =
        std::find_if(program.ops.begin(), program.ops.end(), [](const Op& op) { return op.kind == OpKind::barrier; });
    TANDEM_CHECK(barrier != program.ops.end()) << "a training program without a barrier";
    for (auto op = barrier + 1; op != program.ops.end(); ++op) {
        TraceSpan span(parts_.trace, parts_.device->name(), op_name(op->kind), op_category(op->kind));
        step_args(span, plan).arg("stage", parts_.stage);
        switch (op->kind) {
        case OpKind::update:
            if (parts_.clip_norm > 0) clip_gradients(plan);
            parts_.optimizer->step(parameters_, lr);
            break;
        case OpKind::average_weights: average_->average(); break;
        case OpKind::fold_batch_norm: fold_batch_norm(plan, copies); break;
        default: TANDEM_THROW(Error) << "op '" << op_name(op->kind) << "' cannot run after the step's barrier";
        }
    }
}

void Stage::clip_gradients(const StepPlan& plan) {
    const double factor = clip_factor(group_gradient_norm(plan, parts_.group, parts_.parallel->stages), parts_.clip_norm);
    if (factor >= 1) return;
    for (auto& np : parameters_)
        if (np.parameter->grad.defined())
            tensor_ops(*parts_.device).scale(np.parameter->grad, static_cast<float>(factor));
}

std::vector<BatchNorm2d*> Stage::batch_norms() const {
    std::vector<BatchNorm2d*> bns;
    for (const auto& named : layers_) collect_batch_norms(*named.second, bns);
    return bns;
}

void Stage::fold_batch_norm(const StepPlan& plan, const std::vector<Stage*>& copies) {
    // Deferred batch norm: the whole batch's statistics, merged over every group in group
    // order (every replica folds the same numbers), then folded in once.
    const int stages = parts_.parallel->stages;
    const std::vector<BatchNorm2d*> mine = batch_norms();
    std::vector<std::vector<BatchNorm2d*>> all;
    for (const Stage* copy : copies) all.push_back(copy->batch_norms());
    for (std::size_t i = 0; i < mine.size(); ++i) {
        BatchStatistics::Sums total;
        for (std::size_t g = 0; g < copies.size(); ++g) {
            const auto& statistics = plan.statistics[static_cast<std::size_t>(copies[g]->group() * stages + parts_.stage)];
            if (const auto* sums = statistics.find(all[g][i])) total.merge(*sums);
        }
        if (total.count < 2) continue;  // the layer saw no training batch this step
        const auto [mean, variance] = total.mean_and_variance();
        mine[i]->update_running_stats(mean, variance, total.count);
    }
}

}  // namespace tandem

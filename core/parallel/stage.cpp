#include "parallel/stage.h"

#include <algorithm>
#include <optional>

#include "base/error.h"
#include "device/device.h"
#include "io/trace.h"
#include "kernels/kernel_cache.h"
#include "layers/batch_norm2d.h"
#include "parallel/comm_inproc.h"
#include "parallel/transfer.h"

namespace tandem {
namespace {

// Every span of a step says which step it belongs to and whether it trained or evaluated.
TraceSpan& step_args(TraceSpan& span, const StepPlan& plan) {
    return span.arg("step", plan.step)
        .arg("phase", plan.mode == Mode::train ? "train" : "evaluate");
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
std::vector<std::pair<std::string, Tensor>> gradients_last_first(
    const std::vector<NamedParameter>& params) {
    std::vector<std::pair<std::string, Tensor>> grads;
    for (auto it = params.rbegin(); it != params.rend(); ++it)
        grads.emplace_back(it->name, it->parameter->grad);
    return grads;
}

}  // namespace

Stage::Stage(StageParts parts) : parts_(std::move(parts)) {
    Sequential& net = *parts_.net;
    const StageNode& node = parts_.units->graph.stage(parts_.stage);
    begin_ = node.layer_begin, end_ = node.layer_end;
    for (std::size_t i = begin_; i < end_; ++i) {
        const NetUnit& unit = parts_.units->units[i];
        layers_.emplace_back(unit.name, &unit_layer(net, unit));
    }
    part_ = std::make_unique<GraphPart>(parts_.units->stage_part(net, parts_.stage));
    for (auto& [name, layer] : layers_) {
        layer->to(*parts_.device);
        for (auto& np : named_parameters(*layer))
            parameters_.push_back({name + "." + np.name, np.parameter});
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
        for (auto& b : named_buffers(*layer))
            a.buffers.push_back({name + "." + b.name, b.parameter});
    a.optimizer = parts_.optimizer;
    average_ = std::make_unique<ModelAverage>(std::move(a));
}

Stage::~Stage() = default;

// What the stage keeps between the ops of one run, per micro-batch.
struct Stage::Run {
    Run(StepPlan& plan, std::size_t micro_batches, std::size_t value_count)
        : plan(plan), tapes(micro_batches), labels(micro_batches),
          values(micro_batches, std::vector<Tensor>(value_count)), gradients(values),
          sends_left(micro_batches, std::vector<int>(value_count, 0)) {}
    StepPlan& plan;
    std::vector<Tape> tapes;
    std::vector<Pass> passes;  // one per micro-batch, on the tapes
    std::vector<Pass*> every_pass;
    // the loss stage: each micro-batch's labels, for the loss's gradient
    std::vector<Tensor> labels;
    // Per micro-batch, every value (unit_placement.h's numbering) the stage holds: its inputs
    // until their gradients are sent, what its units make until backward is done with it (or,
    // keeping nothing for backward, until sent); and their gradients, summed over the readers,
    // until sent or used.
    std::vector<std::vector<Tensor>> values, gradients;
    // Per micro-batch and value, the activation sends still to come: the last one lets go of
    // the value unless the stage's units or the loss still read it.
    std::vector<std::vector<int>> sends_left;
    bool computes_loss = false;
    std::vector<std::vector<Tensor>> stashed;  // deterministic mode: each micro-batch's gradients
    BatchStatistics* statistics = nullptr;     // deferred batch norm
    // A backward run in parts (buckets posted between them) is one span, from its first part
    // to its last.
    std::optional<TraceSpan> backward_span;
};

float Stage::loss_scale(const StepPlan& plan) const {
    // Model averaging: each replica follows its own shard's mean gradient. Loss scaling
    // multiplies either by its scale (exactly, when a power of two).
    if (parts_.parallel->average_every == 0) return plan.loss_scale * plan.gradient_scale;
    const int m = plan.micro_batches, g = parts_.group;
    return plan.gradient_scale / static_cast<float>(plan.start((g + 1) * m) - plan.start(g * m));
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

    Run run(plan, static_cast<std::size_t>(micro_batches), parts_.units->values);
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
        parts_.communicator->all_reduce_sum(parts_.rank, static_cast<float*>(buffer.raw()),
                                            mine.size(), parts_.parallel->algorithm);
        const std::vector<float> sums = buffer.to_vector();
        values.assign(sums.begin(), sums.end());
    };
    bool sends_gradient = false;
    for (const Op& op : program.ops) {
        if (op.kind == OpKind::send_activation && op.micro_batch >= 0)
            ++run.sends_left[static_cast<std::size_t>(op.micro_batch)][edge_value(op.edge)];
        run.computes_loss = run.computes_loss || op.kind == OpKind::loss;
        sends_gradient = sends_gradient || op.kind == OpKind::send_gradient;
    }
    run.passes.reserve(run.tapes.size());
    for (int m = 0; m < micro_batches; ++m) {
        const int k = group * micro_batches + m;
        Pass& pass = run.passes.emplace_back(
            Pass{dev, plan.mode, k, run.tapes[static_cast<std::size_t>(m)], plan.rng});
        pass.first_sample = plan.sample_offset + plan.start(k);
        pass.loss_scale = loss_scale(plan);
        pass.added_loss = plan.added_loss_slot(group, stage, m);
        pass.batch_statistics = run.statistics;
        pass.need_dx = sends_gradient;  // nobody reads the gradient of the images
        if (train && p.batch_norm == BatchNormMode::sync)
            pass.sum_over_replicas = sum_over_replicas;
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
        // The value the op's edge carries, for this micro-batch, and its gradient.
        auto value = [&]() -> Tensor& { return run.values[mi][edge_value(op.edge)]; };
        auto gradient = [&]() -> Tensor& { return run.gradients[mi][edge_value(op.edge)]; };
        // Gradients of an output from several readers (and the loss) add up, in program order:
        // the same sum on every run; in the value's layout (a sent value let go of: the
        // gradient's own, which its reader's backward gave in the layout it was sent in).
        auto add_gradient = [&](const Tensor& dy) {
            add_in_layout(gradient(), dy, value().defined() ? value() : dy, dev);
        };
        // Evaluation: the stage lets go of a micro-batch's values once they are sent.
        auto done_with_values = [&] {
            if (!train) run.values[mi].assign(run.values[mi].size(), Tensor());
        };
        switch (op.kind) {
            case OpKind::load_input: {
                span(traced);
                Tensor x = transfer(plan.images.narrow_batch(plan.start(k), plan.count(k)), dev);
                value() = x.shape().rank() == 4 && x.layout() != parts_.layout
                              ? x.to_layout(parts_.layout)
                              : x;
                break;
            }
            case OpKind::receive_activation: value() = receive(EdgeDirection::forward); break;
            case OpKind::forward:
            case OpKind::recompute:
                span(traced);
                forward(run, op);
                break;
            case OpKind::loss:
                span(traced);
                // Labels go straight to the stage computing the loss.
                run.labels[mi] =
                    transfer(plan.labels.narrow_batch(plan.start(k), plan.count(k)), dev);
                try {
                    plan.sums[static_cast<std::size_t>(k)] =
                        parts_.loss->forward(value(), run.labels[mi], run.passes[mi]);
                } catch (Error& e) {
                    // The kernel counts within the micro-batch: say where that is in the batch.
                    e.add_context("in the loss of samples " + std::to_string(plan.start(k) + 1) +
                                  ".." + std::to_string(plan.start(k + 1)) + " of the batch");
                    throw;
                }
                if (!train) run.labels[mi] = Tensor(), done_with_values();
                break;
            case OpKind::send_activation: {
                const std::size_t v = edge_value(op.edge);
                // The last send lets go of a value nothing here reads any more (its backward reads
                // its inputs, the loss the net's output).
                const bool last = --run.sends_left[mi][v] == 0;
                const bool read_here =
                    part_->reads(v) || (run.computes_loss && v == parts_.units->loss_value);
                plan.board.put(EdgeDirection::forward, group, op.edge, op.micro_batch,
                               last && !read_here ? std::move(value()) : value());
                if (last && !run.computes_loss &&
                    std::all_of(run.sends_left[mi].begin(), run.sends_left[mi].end(),
                                [](int n) { return n == 0; }))
                    done_with_values();
                break;
            }
            case OpKind::loss_gradient:
                span(traced);
                add_gradient(parts_.loss->backward(value(), run.labels[mi], loss_scale(plan),
                                                   run.passes[mi]));
                run.labels[mi] = Tensor();
                break;
            case OpKind::receive_gradient: add_gradient(receive(EdgeDirection::backward)); break;
            case OpKind::backward:
                if (op.layer_end == end_) span(run.backward_span);
                backward(run, op);
                if (op.layer_begin == begin_) run.backward_span.reset();
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
                // Sent once per edge; when no reader's gradient reached this input, zero.
                Tensor dx = std::move(gradient());
                if (!dx.defined()) {
                    dx = Tensor::empty(value().shape(), dev, DType::f32, value().layout());
                    tensor_ops(dev).fill(dx, 0.f);
                }
                gradient() = Tensor(), value() = Tensor();
                plan.board.put(EdgeDirection::backward, group, op.edge, op.micro_batch,
                               std::move(dx));
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
                    lane_->post([this, bucket, step = plan.step] {
                        all_reduce(bucket, lane_->name(), step);
                    });
                } else {
                    all_reduce(bucket, dev.name(), plan.step);
                }
                break;
            }
            case OpKind::wait_lane: lane_->wait(); break;
            case OpKind::unscale_gradients: {
                span(traced);
                std::vector<Tensor*> grads;
                for (auto& np : parameters_)
                    if (np.parameter->grad.defined()) grads.push_back(&np.parameter->grad);
                plan.gradients_finite[static_cast<std::size_t>(group * p.stages + stage)] =
                    tensor_ops(dev).unscale(grads, 1.0f / plan.gradient_scale);
                break;
            }
            case OpKind::gradient_norm: {
                span(traced);
                double squares = 0;
                for (auto& np : parameters_)
                    if (np.parameter->grad.defined())
                        squares += tensor_ops(dev).sum_squares(np.parameter->grad);
                plan.gradient_squares[static_cast<std::size_t>(group * p.stages + stage)] = squares;
                break;
            }
            default:
                TANDEM_THROW(Error)
                    << "op '" << op_name(op.kind) << "' cannot run before the step's barrier";
        }
    }
}

void Stage::forward(Run& run, const Op& op) {
    const std::size_t low = op.layer_begin - begin_, high = op.layer_end - begin_;
    if (op.micro_batch == kEveryMicroBatch) {
        part_->forward_many(run.values, run.every_pass);
        return;
    }
    const auto mi = static_cast<std::size_t>(op.micro_batch);
    Pass& pass = run.passes[mi];
    if (pass.mode != Mode::train) {
        part_->forward(run.values[mi], pass, low, high, GraphPart::Keep::outputs);
        return;
    }
    if (op.kind == OpKind::recompute) {
        // The forward again, keeping what backward needs; not counted again in running statistics.
        pass.recomputing = true;
        part_->forward(run.values[mi], pass, low, high);
        pass.recomputing = false;
        // What it sent went with the first forward: only the loss may read it again.
        for (int edge : parts_.units->graph.stage(parts_.stage).outputs)
            if (const std::size_t v = edge_value(edge);
                !part_->reads(v) && v != parts_.units->loss_value)
                run.values[mi][v] = Tensor();
        return;
    }
    if (op.keeps_activations) {
        part_->forward(run.values[mi], pass, low, high);
        return;
    }
    // Without keeping what backward needs: the inputs stay among the values for the recompute,
    // what the units make goes once read (but for what the stage sends).
    Tape scratch;
    Pass keep_nothing{pass.device, Mode::train, pass.micro_batch, scratch, pass.rng_key};
    keep_nothing.first_sample = pass.first_sample;
    keep_nothing.batch_statistics = pass.batch_statistics;
    part_->forward(run.values[mi], keep_nothing, low, high, GraphPart::Keep::outputs);
}

void Stage::backward(Run& run, const Op& op) {
    // The values the stage's units made are spent once its backward is done; the inputs
    // stay until their gradients are sent.
    auto let_go_of_made = [this](std::vector<Tensor>& values) {
        for (std::size_t i = begin_; i < end_; ++i) values[parts_.units->units[i].value] = Tensor();
    };
    if (op.micro_batch == kEveryMicroBatch) {
        part_->backward_many(run.values, run.gradients, run.every_pass);
        for (auto& values : run.values) let_go_of_made(values);
        return;
    }
    const auto mi = static_cast<std::size_t>(op.micro_batch);
    part_->backward(run.values[mi], run.gradients[mi], run.passes[mi], op.layer_begin - begin_,
                    op.layer_end - begin_);
    // What forward kept for this micro-batch is spent: free it now, so a stage holds only the
    // micro-batches in flight (1F1B's bound), not every one until the step ends.
    if (op.layer_begin == begin_) {
        run.tapes[mi].clear();
        let_go_of_made(run.values[mi]);
    }
}

void Stage::all_reduce(std::size_t bucket, const std::string& track, std::int64_t step) {
    TraceSpan span(parts_.trace, track, op_name(OpKind::all_reduce),
                   op_category(OpKind::all_reduce));
    span.arg("step", step).arg("phase", "train");
    span.arg("bucket", bucket)
        .arg("bytes", buckets_->bucket(bucket).flat.nbytes())
        .arg("stage", parts_.stage);
    buckets_->all_reduce(bucket, *parts_.communicator, parts_.rank, parts_.parallel->algorithm);
}

void Stage::drain_lane() noexcept {
    if (lane_) lane_->drain();
}

void Stage::update(const StepPlan& plan, const DeviceProgram& program, float lr,
                   const std::vector<Stage*>& copies) {
    const auto barrier = std::find_if(program.ops.begin(), program.ops.end(),
                                      [](const Op& op) { return op.kind == OpKind::barrier; });
    TANDEM_CHECK(barrier != program.ops.end()) << "a training program without a barrier";
    for (auto op = barrier + 1; op != program.ops.end(); ++op) {
        TraceSpan span(parts_.trace, parts_.device->name(), op_name(op->kind),
                       op_category(op->kind));
        step_args(span, plan).arg("stage", parts_.stage);
        switch (op->kind) {
            case OpKind::update:
                // Loss scaling: gradients not finite somewhere skip the step everywhere.
                if (!all_gradients_finite(plan)) break;
                if (parts_.clip_norm > 0) clip_gradients(plan);
                parts_.optimizer->step(parameters_, lr);
                break;
            case OpKind::average_weights: average_->average(); break;
            case OpKind::fold_batch_norm: fold_batch_norm(plan, copies); break;
            default:
                TANDEM_THROW(Error)
                    << "op '" << op_name(op->kind) << "' cannot run after the step's barrier";
        }
    }
}

void Stage::clip_gradients(const StepPlan& plan) {
    const double factor = clip_factor(
        group_gradient_norm(plan, parts_.group, parts_.parallel->stages), parts_.clip_norm);
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
            const auto& statistics = plan.statistics[static_cast<std::size_t>(
                copies[g]->group() * stages + parts_.stage)];
            if (const auto* sums = statistics.find(all[g][i])) total.merge(*sums);
        }
        if (total.count < 2) continue;  // the layer saw no training batch this step
        const auto [mean, variance] = total.mean_and_variance();
        mine[i]->update_running_stats(mean, variance, total.count);
    }
}

}  // namespace tandem

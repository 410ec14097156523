// Engine, one worker's part of a step: it executes its device's stage program (program.h) op
// by op: inputs and hand-offs to the neighbouring stages, forward and backward of its layers
// for each micro-batch (or all together, for synchronised batch norm), the loss on the last
// stage, the gradient all-reduce with the other groups, and after the step's barrier the
// optimizer's update.
#include <algorithm>
#include <optional>

#include "base/error.h"
#include "device/device.h"
#include "io/trace.h"
#include "layers/batch_norm2d.h"
#include "layers/kernel_cache.h"
#include "parallel/buckets.h"
#include "parallel/comm_inproc.h"
#include "parallel/engine_internal.h"
#include "parallel/reduce_lane.h"
#include "parallel/transfer.h"

namespace tandem {
namespace {

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

// Deterministic mode: the stage's gradients become the canonical sum of the micro-batches'.
void sum_in_canonical_order(std::vector<std::vector<Tensor>>& micro_grads, const std::vector<NamedParameter>& params) {
    pairwise_sum(micro_grads, 0, micro_grads.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        Tensor& grad = params[i].parameter->grad;
        tensor_ops(grad.device()).copy(micro_grads.front()[i], grad);
    }
}

// Every batch-norm layer under `layer`, depth first: the same order in every replica.
void collect_batch_norms(Layer& layer, std::vector<BatchNorm2d*>& out) {
    if (auto* bn = dynamic_cast<BatchNorm2d*>(&layer)) out.push_back(bn);
    for (Layer* child : layer.children()) collect_batch_norms(*child, out);
}

}  // namespace

// What one worker keeps between the ops of its program, per micro-batch.
struct Engine::StageRun {
    StageRun(std::size_t micro_batches)
        : tapes(micro_batches), inputs(micro_batches), outputs(micro_batches), labels(micro_batches),
          gradients(micro_batches) {}
    std::vector<Tape> tapes;
    std::vector<Pass> passes;    // one per micro-batch, on the tapes
    std::vector<Tensor> inputs;  // the stage's input, until forward (or a recompute) is done with it
    std::vector<Tensor> outputs; // the stage's output, until the loss or the send takes it
    std::vector<Tensor> labels;  // the last stage: each micro-batch's labels, for the loss's gradient
    std::vector<Tensor> gradients;  // flowing down through backward, until sent
    std::vector<std::vector<Tensor>> stashed;  // deterministic mode: each micro-batch's gradients
};

void Engine::run_stage(StepPlan& plan, int group, int stage) {
    const ParallelOptions& p = options_.parallel;
    const DeviceProgram& program = plan.programs[static_cast<std::size_t>(group * p.stages + stage)];
    Replica& replica = *replicas_[static_cast<std::size_t>(group)];
    Device& dev = stage_device(group, stage);
    const bool train = plan.mode == Mode::train;
    const std::size_t index = static_cast<std::size_t>(group * p.stages + stage);
    Trace* trace = options_.trace.get();
    if (train) Sgd::zero_grad(stage_parameters(group, stage));

    const int micro_batches = plan.micro_batches;
    StageRun run(static_cast<std::size_t>(micro_batches));
    // Model averaging: each replica follows its own shard's mean gradient.
    const float loss_scale =
        p.average_every > 0
            ? 1.0f / static_cast<float>(plan.start((group + 1) * micro_batches) - plan.start(group * micro_batches))
            : plan.loss_scale;
    BatchStatistics* statistics = train && !plan.statistics.empty() ? &plan.statistics[index] : nullptr;
    Communicator* comm = total_groups() > 1 ? communicators_[static_cast<std::size_t>(stage)].get() : nullptr;
    // Synchronised batch norm: every batch-norm layer sums its statistics over the replicas.
    auto sum_over_replicas = [&](std::vector<double>& values) {
        if (!comm) return;
        TraceSpan span(trace, dev.name(), "batch-norm statistics", "allreduce");
        // In the device's memory, where the stage's communicator reduces (NCCL on GPUs).
        const std::vector<float> mine(values.begin(), values.end());
        Tensor buffer = Tensor::from_vector({std::int64_t(mine.size())}, dev, mine);
        comm->all_reduce_sum(global_group(group), static_cast<float*>(buffer.raw()), mine.size(), p.algorithm);
        const std::vector<float> sums = buffer.to_vector();
        values.assign(sums.begin(), sums.end());
    };
    run.passes.reserve(run.tapes.size());
    for (int m = 0; m < micro_batches; ++m) {
        const int k = group * micro_batches + m;
        Pass& pass = run.passes.emplace_back(Pass{dev, plan.mode, k, run.tapes[static_cast<std::size_t>(m)], plan.rng});
        pass.first_sample = plan.sample_offset + plan.start(k);
        pass.batch_statistics = statistics;
        pass.need_dx = stage > 0;  // nobody reads the gradient of the images
        if (train && p.batch_norm == BatchNormMode::sync) pass.sum_over_replicas = sum_over_replicas;
    }
    std::vector<Pass*> every_pass;
    for (auto& pass : run.passes) every_pass.push_back(&pass);
    ReduceLane* lane = train && !lanes_.empty() ? lanes_[index].get() : nullptr;
    std::optional<TraceSpan> backward_span;

    for (const Op& op : program.ops) {
        if (op.kind == OpKind::barrier) break;  // the rest runs after every worker is here
        const auto mi = static_cast<std::size_t>(std::max(op.micro_batch, 0));
        const int k = group * micro_batches + op.micro_batch;
        Pass& pass = run.passes[mi];
        auto span_of = [&](TraceSpan& span) -> TraceSpan& {
            if (op.micro_batch >= 0) span.arg("micro_batch", op.micro_batch);
            return span.arg("stage", stage);
        };
        const int link = std::min(stage, op.peer % std::max(p.stages, 1));
        switch (op.kind) {
        case OpKind::load_input: {
            TraceSpan span(trace, dev.name(), op_name(op.kind), op_category(op.kind));
            span_of(span);
            Tensor x = transfer(plan.images.narrow_batch(plan.start(k), plan.count(k)), dev);
            run.inputs[mi] = x.shape().rank() == 4 && x.layout() != options_.layout ? x.to_layout(options_.layout) : x;
            break;
        }
        case OpKind::receive_activation: {
            Tensor x = plan.board.take(LinkDirection::forward, group, link, op.micro_batch);
            TraceSpan span(trace, dev.name(), op_name(op.kind), op_category(op.kind));
            span_of(span).arg("bytes", x.nbytes());
            run.inputs[mi] = transfer(x, dev);
            break;
        }
        case OpKind::forward: {
            TraceSpan span(trace, dev.name(), op_name(op.kind), op_category(op.kind));
            span_of(span);
            if (op.micro_batch == kEveryMicroBatch) {
                run.outputs = replica.net->forward_many_range(run.inputs, every_pass, op.layer_begin, op.layer_end);
                run.inputs.assign(run.inputs.size(), Tensor());
            } else if (!op.keeps_activations) {
                // Without keeping what backward needs; the recompute op runs it again.
                Tape scratch;
                Pass keep_nothing{dev, Mode::train, k, scratch, plan.rng};
                keep_nothing.first_sample = pass.first_sample;
                keep_nothing.batch_statistics = statistics;
                run.outputs[mi] = replica.net->forward_range(run.inputs[mi], keep_nothing, op.layer_begin, op.layer_end);
            } else {
                run.outputs[mi] = replica.net->forward_range(run.inputs[mi], pass, op.layer_begin, op.layer_end);
                run.inputs[mi] = Tensor();
            }
            break;
        }
        case OpKind::loss: {
            TraceSpan span(trace, dev.name(), op_name(op.kind), op_category(op.kind));
            span_of(span);
            // Labels go straight to the last stage.
            run.labels[mi] = transfer(plan.labels.narrow_batch(plan.start(k), plan.count(k)), dev);
            plan.sums[static_cast<std::size_t>(k)] = replica.loss->forward(run.outputs[mi], run.labels[mi], pass);
            if (!train) run.outputs[mi] = Tensor(), run.labels[mi] = Tensor();
            break;
        }
        case OpKind::send_activation:
            plan.board.put(LinkDirection::forward, group, link, op.micro_batch, std::move(run.outputs[mi]));
            break;
        case OpKind::loss_gradient: {
            TraceSpan span(trace, dev.name(), op_name(op.kind), op_category(op.kind));
            span_of(span);
            run.gradients[mi] = replica.loss->backward(run.outputs[mi], run.labels[mi], loss_scale, pass);
            run.outputs[mi] = Tensor(), run.labels[mi] = Tensor();
            break;
        }
        case OpKind::receive_gradient: {
            Tensor dy = plan.board.take(LinkDirection::backward, group, link, op.micro_batch);
            TraceSpan span(trace, dev.name(), op_name(op.kind), op_category(op.kind));
            span_of(span).arg("bytes", dy.nbytes());
            run.gradients[mi] = transfer(dy, dev);
            break;
        }
        case OpKind::recompute: {
            TraceSpan span(trace, dev.name(), op_name(op.kind), op_category(op.kind));
            span_of(span);
            pass.recomputing = true;
            replica.net->forward_range(run.inputs[mi], pass, op.layer_begin, op.layer_end);
            pass.recomputing = false;
            run.inputs[mi] = Tensor();
            break;
        }
        case OpKind::backward: {
            const std::size_t begin = stage_begin(stage), end = stage_begin(stage + 1);
            // A backward run in parts (buckets posted between them) is one span, from its
            // first part to its last.
            if (op.layer_end == end) span_of(backward_span.emplace(trace, dev.name(), op_name(op.kind), op_category(op.kind)));
            if (op.micro_batch == kEveryMicroBatch) {
                run.gradients = replica.net->backward_many_range(run.gradients, every_pass, begin, end);
            } else {
                run.gradients[mi] =
                    replica.net->backward_part(run.gradients[mi], pass, begin, end, op.layer_begin, op.layer_end);
                // What forward kept for this micro-batch is spent: free it now, so a stage holds
                // only the micro-batches in flight (1F1B's bound), not every one until the step ends.
                if (op.layer_begin == begin) run.tapes[mi].clear();
            }
            if (op.layer_begin == begin) backward_span.reset();
            break;
        }
        case OpKind::stash_gradients: {
            TraceSpan span(trace, dev.name(), op_name(op.kind), op_category(op.kind));
            span_of(span);
            for (auto& np : stage_parameters(group, stage)) {
                run.stashed.resize(run.tapes.size());
                run.stashed[mi].push_back(np.parameter->grad.clone());
                tensor_ops(dev).fill(np.parameter->grad, 0.f);
            }
            break;
        }
        case OpKind::send_gradient:
            plan.board.put(LinkDirection::backward, group, link, op.micro_batch, std::move(run.gradients[mi]));
            break;
        case OpKind::sum_gradients: {
            TraceSpan span(trace, dev.name(), op_name(op.kind), op_category(op.kind));
            span_of(span);
            if (!run.stashed.empty()) sum_in_canonical_order(run.stashed, stage_parameters(group, stage));
            break;
        }
        case OpKind::all_reduce: {
            const auto bucket = static_cast<std::size_t>(op.bucket);
            if (op.on_lane) {
                lane->post([this, group, stage, bucket, lane] { reduce_bucket(group, stage, bucket, lane->name()); });
            } else {
                reduce_bucket(group, stage, bucket, dev.name());
            }
            break;
        }
        case OpKind::wait_lane:
            lane->wait();
            break;
        default:
            TANDEM_THROW(Error) << "op '" << op_name(op.kind) << "' cannot run before the step's barrier";
        }
    }
}

void Engine::run_update(const StepPlan& plan, int group, int stage, float lr) {
    const DeviceProgram& program = plan.programs[static_cast<std::size_t>(group * options_.parallel.stages + stage)];
    const auto barrier = std::find_if(program.ops.begin(), program.ops.end(),
                                      [](const Op& op) { return op.kind == OpKind::barrier; });
    TANDEM_CHECK(barrier != program.ops.end()) << "a training program without a barrier";
    Trace* trace = options_.trace.get();
    const std::string& track = stage_device(group, stage).name();
    for (auto op = barrier + 1; op != program.ops.end(); ++op) {
        TraceSpan span(trace, track, op_name(op->kind), op_category(op->kind));
        span.arg("stage", stage);
        switch (op->kind) {
        case OpKind::update:
            replicas_[static_cast<std::size_t>(group)]->sgd->step(stage_parameters(group, stage), lr);
            break;
        case OpKind::average_weights:
            average_weights(group, stage);
            break;
        case OpKind::fold_batch_norm:
            fold_batch_norm(plan, group, stage);
            break;
        default:
            TANDEM_THROW(Error) << "op '" << op_name(op->kind) << "' cannot run after the step's barrier";
        }
    }
}

void Engine::fold_batch_norm(const StepPlan& plan, int group, int stage) {
    // Deferred batch norm: the whole batch's statistics, merged over every group in group
    // order (every replica folds the same numbers), then folded in once.
    const int stages = options_.parallel.stages;
    auto stage_batch_norms = [&](int g) {
        std::vector<BatchNorm2d*> bns;
        Sequential& net = *replicas_[static_cast<std::size_t>(g)]->net;
        for (std::size_t i = stage_begin(stage); i < stage_begin(stage + 1); ++i) collect_batch_norms(net.at(i), bns);
        return bns;
    };
    const std::vector<BatchNorm2d*> mine = stage_batch_norms(group);
    std::vector<std::vector<BatchNorm2d*>> all;
    for (int g = 0; g < plan.groups; ++g) all.push_back(stage_batch_norms(g));
    for (std::size_t i = 0; i < mine.size(); ++i) {
        BatchStatistics::Sums total;
        for (int g = 0; g < plan.groups; ++g)
            if (const auto* sums = plan.statistics[static_cast<std::size_t>(g * stages + stage)].find(all[static_cast<std::size_t>(g)][i]))
                total.merge(*sums);
        if (total.count < 2) continue;  // the layer saw no training batch this step
        const auto [mean, variance] = total.mean_and_variance();
        mine[i]->update_running_stats(mean, variance, total.count);
    }
}

void Engine::average_weights(int group, int stage) {
    Communicator& comm = *communicators_[static_cast<std::size_t>(stage)];
    GradientBuckets& buckets =
        *weight_buckets_[static_cast<std::size_t>(group * options_.parallel.stages + stage)];
    const float mean = 1.0f / static_cast<float>(total_groups());
    for (std::size_t b = 0; b < buckets.size(); ++b)
        buckets.all_reduce(b, comm, global_group(group), ReduceAlgorithm::tree, mean);
}

void Engine::reduce_bucket(int group, int stage, std::size_t bucket, const std::string& track) {
    GradientBuckets& buckets = *buckets_[static_cast<std::size_t>(group * options_.parallel.stages + stage)];
    TraceSpan span(options_.trace.get(), track, op_name(OpKind::all_reduce), op_category(OpKind::all_reduce));
    span.arg("bucket", bucket).arg("bytes", buckets.bucket(bucket).flat.nbytes()).arg("stage", stage);
    buckets.all_reduce(bucket, *communicators_[static_cast<std::size_t>(stage)], global_group(group),
                       options_.parallel.algorithm);
}

}  // namespace tandem

// Engine, one worker's part of a step: its stage's forward and backward passes for every
// micro-batch in the schedule's order (or all together, for synchronised batch norm), the
// hand-offs to the neighbouring stages, and the gradient all-reduce with the other groups.
#include <algorithm>

#include "base/error.h"
#include "device/device.h"
#include "io/trace.h"
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

}  // namespace

Tensor Engine::stage_input(StepPlan& plan, int group, int stage, int m) {
    Device& dev = stage_device(group, stage);
    Trace* trace = options_.trace.get();
    const int k = group * plan.micro_batches + m;
    if (stage == 0) {
        TraceSpan span(trace, dev.name(), "input", "transfer");
        Tensor x = transfer(plan.images.narrow_batch(plan.start(k), plan.count(k)), dev);
        return x.shape().rank() == 4 && x.layout() != options_.layout ? x.to_layout(options_.layout) : x;
    }
    Tensor x = plan.board.take(LinkDirection::forward, group, stage - 1, m);
    TraceSpan span(trace, dev.name(), "receive activation", "transfer");
    span.arg("micro_batch", k).arg("bytes", x.nbytes());
    return transfer(x, dev);
}

void Engine::run_stage(StepPlan& plan, int group, int stage) {
    const ParallelOptions& p = options_.parallel;
    Replica& replica = *replicas_[static_cast<std::size_t>(group)];
    Device& dev = stage_device(group, stage);
    const bool first = stage == 0, last = stage == p.stages - 1;
    const std::size_t begin = stage_begin(stage), end = stage_begin(stage + 1);
    const int micro_batches = plan.micro_batches;
    const bool train = plan.mode == Mode::train;
    if (train && p.batch_norm == BatchNormMode::sync) return run_stage_together(plan, group, stage);
    Trace* trace = options_.trace.get();
    if (train) Sgd::zero_grad(stage_parameters(group, stage));

    std::vector<Tape> tapes(static_cast<std::size_t>(micro_batches));
    std::vector<Tensor> logits(tapes.size()), labels(tapes.size());
    // With recomputation: each micro-batch's stage input, all that is kept between its passes.
    const bool recompute = train && recomputes(stage);
    std::vector<Tensor> inputs(recompute ? tapes.size() : 0);
    // Model averaging: each replica follows its own shard's mean gradient.
    const float loss_scale =
        p.average_every > 0
            ? 1.0f / static_cast<float>(plan.start((group + 1) * micro_batches) - plan.start(group * micro_batches))
            : plan.loss_scale;
    // Deterministic mode: each micro-batch's gradients, kept apart until the canonical sum.
    const bool deterministic = train && p.deterministic;
    std::vector<std::vector<Tensor>> micro_grads(deterministic ? tapes.size() : 0);
    BatchStatistics* statistics =
        train && !plan.statistics.empty() ? &plan.statistics[static_cast<std::size_t>(group * p.stages + stage)] : nullptr;
    std::vector<StageOp> ops;
    if (train) {
        ops = stage_ops(p.schedule, p.stages, stage, micro_batches);
    } else {
        for (int m = 0; m < micro_batches; ++m) ops.push_back({StageOp::forward, m});
    }
    // Overlap: during the last backward, each bucket goes to the stage's lane as soon as the
    // layers it covers are done (buckets run last layer first, as backward does).
    const std::size_t index = static_cast<std::size_t>(group * p.stages + stage);
    ReduceLane* lane = train && !lanes_.empty() ? lanes_[index].get() : nullptr;
    std::size_t final_gradients = 0, posted = 0;
    auto post_ready = [&](std::size_t ready) {
        for (; posted < ready; ++posted)
            lane->post([this, group, stage, b = posted, lane] { reduce_bucket(group, stage, b, lane->name()); });
    };
    Sequential::AfterLayer after_layer;
    if (lane)
        after_layer = [&](std::size_t i) {
            final_gradients += layer_parameters_[i];
            post_ready(buckets_[index]->complete_buckets(final_gradients));
        };
    const auto final_op = std::find_if(ops.rbegin(), ops.rend(), [](const StageOp& op) { return op.kind == StageOp::backward; });
    const StageOp* last_backward = final_op == ops.rend() ? nullptr : &*final_op;
    for (const StageOp& op : ops) {
        const int m = op.micro_batch, k = group * micro_batches + m;
        const auto mi = static_cast<std::size_t>(m);
        Pass pass{dev, plan.mode, k, tapes[mi], plan.rng};
        pass.first_sample = plan.sample_offset + plan.start(k);
        pass.batch_statistics = statistics;
        if (op.kind == StageOp::forward) {
            const Tensor x = stage_input(plan, group, stage, m);
            TraceSpan span(trace, dev.name(), "forward", "forward");
            span.arg("micro_batch", k).arg("stage", stage);
            Tensor y;
            if (recompute) {
                // Forward without keeping what backward needs; backward runs it again.
                Tape scratch;
                Pass keep_nothing{dev, Mode::train, k, scratch, plan.rng};
                keep_nothing.first_sample = pass.first_sample;
                keep_nothing.batch_statistics = statistics;
                y = replica.net->forward_range(x, keep_nothing, begin, end);
                inputs[mi] = x;
            } else {
                y = replica.net->forward_range(x, pass, begin, end);
            }
            if (!last) {
                plan.board.put(LinkDirection::forward, group, stage, m, std::move(y));
                continue;
            }
            // Labels go straight to the last stage.
            labels[mi] = transfer(plan.labels.narrow_batch(plan.start(k), plan.count(k)), dev);
            plan.sums[static_cast<std::size_t>(k)] = replica.loss->forward(y, labels[mi], pass);
            logits[mi] = std::move(y);
            continue;
        }
        Tensor dy;
        if (last) {
            dy = replica.loss->backward(logits[mi], labels[mi], loss_scale, pass);
            logits[mi] = Tensor(), labels[mi] = Tensor();
        } else {
            dy = plan.board.take(LinkDirection::backward, group, stage, m);
            TraceSpan span(trace, dev.name(), "receive gradient", "transfer");
            span.arg("micro_batch", k).arg("bytes", dy.nbytes());
            dy = transfer(dy, dev);
        }
        if (recompute) {
            TraceSpan again(trace, dev.name(), "recompute", "forward");
            again.arg("micro_batch", k).arg("stage", stage);
            pass.recomputing = true;
            replica.net->forward_range(inputs[mi], pass, begin, end);
            pass.recomputing = false;
            inputs[mi] = Tensor();
        }
        TraceSpan span(trace, dev.name(), "backward", "backward");
        span.arg("micro_batch", k).arg("stage", stage);
        pass.need_dx = !first;  // nobody reads the gradient of the images
        const bool final_pass = &op == last_backward;
        Tensor dx = replica.net->backward_range(dy, pass, begin, end, final_pass ? after_layer : nullptr);
        // What forward kept for this micro-batch is spent: free it now, so a stage holds only
        // the micro-batches in flight (1F1B's bound), not every one until the step ends.
        tapes[mi].clear();
        if (deterministic) {
            for (auto& np : stage_parameters(group, stage)) {
                micro_grads[mi].push_back(np.parameter->grad.clone());
                tensor_ops(dev).fill(np.parameter->grad, 0.f);
            }
        }
        if (!first) plan.board.put(LinkDirection::backward, group, stage - 1, m, std::move(dx));
    }
    if (deterministic) sum_in_canonical_order(micro_grads, stage_parameters(group, stage));
    if (lane) {
        post_ready(buckets_[index]->size());
        lane->wait();
    } else if (train && total_groups() > 1 && p.average_every == 0) {
        reduce_gradients(group, stage);
    }
}

void Engine::run_stage_together(StepPlan& plan, int group, int stage) {
    const ParallelOptions& p = options_.parallel;
    Replica& replica = *replicas_[static_cast<std::size_t>(group)];
    Device& dev = stage_device(group, stage);
    const bool first = stage == 0, last = stage == p.stages - 1;
    const std::size_t begin = stage_begin(stage), end = stage_begin(stage + 1);
    const int micro_batches = plan.micro_batches;
    Trace* trace = options_.trace.get();
    Sgd::zero_grad(stage_parameters(group, stage));

    Communicator* comm = total_groups() > 1 ? communicators_[static_cast<std::size_t>(stage)].get() : nullptr;
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
    std::vector<Tape> tapes(static_cast<std::size_t>(micro_batches));
    std::vector<Pass> passes;
    std::vector<Pass*> pass_ptrs;
    passes.reserve(tapes.size());
    std::vector<Tensor> xs;
    for (int m = 0; m < micro_batches; ++m) {
        const int k = group * micro_batches + m;
        passes.push_back(Pass{dev, Mode::train, k, tapes[static_cast<std::size_t>(m)], plan.rng});
        passes.back().first_sample = plan.sample_offset + plan.start(k);
        passes.back().sum_over_replicas = sum_over_replicas;
        passes.back().need_dx = !first;
        xs.push_back(stage_input(plan, group, stage, m));
    }
    for (auto& pass : passes) pass_ptrs.push_back(&pass);

    std::vector<Tensor> ys;
    {
        TraceSpan span(trace, dev.name(), "forward (all micro-batches)", "forward");
        ys = replica.net->forward_many_range(xs, pass_ptrs, begin, end);
    }
    xs.clear();
    std::vector<Tensor> dys(ys.size());
    for (int m = 0; m < micro_batches; ++m) {
        const auto mi = static_cast<std::size_t>(m);
        const int k = group * micro_batches + m;
        if (!last) {
            plan.board.put(LinkDirection::forward, group, stage, m, std::move(ys[mi]));
            continue;
        }
        const Tensor labels = transfer(plan.labels.narrow_batch(plan.start(k), plan.count(k)), dev);
        plan.sums[static_cast<std::size_t>(k)] = replica.loss->forward(ys[mi], labels, passes[mi]);
        dys[mi] = replica.loss->backward(ys[mi], labels, plan.loss_scale, passes[mi]);
    }
    if (!last)
        for (int m = 0; m < micro_batches; ++m)
            dys[static_cast<std::size_t>(m)] = transfer(plan.board.take(LinkDirection::backward, group, stage, m), dev);
    std::vector<Tensor> dxs;
    {
        TraceSpan span(trace, dev.name(), "backward (all micro-batches)", "backward");
        dxs = replica.net->backward_many_range(dys, pass_ptrs, begin, end);
    }
    if (!first)
        for (int m = 0; m < micro_batches; ++m)
            plan.board.put(LinkDirection::backward, group, stage - 1, m, std::move(dxs[static_cast<std::size_t>(m)]));
    if (total_groups() > 1) reduce_gradients(group, stage);
}

bool Engine::recomputes(int stage) const {
    const auto& r = options_.parallel.recompute;
    if (r.empty()) return false;
    return r.size() == 1 ? r.front() : r[static_cast<std::size_t>(stage)];
}

bool Engine::reduces_during_backward() const {
    const ParallelOptions& p = options_.parallel;
    return total_groups() > 1 && p.average_every == 0 && p.overlap_backward && !p.deterministic &&
           p.batch_norm != BatchNormMode::sync;
}

void Engine::reduce_gradients(int group, int stage) {
    const std::size_t buckets = buckets_[static_cast<std::size_t>(group * options_.parallel.stages + stage)]->size();
    for (std::size_t b = 0; b < buckets; ++b) reduce_bucket(group, stage, b, stage_device(group, stage).name());
}

void Engine::reduce_bucket(int group, int stage, std::size_t bucket, const std::string& track) {
    GradientBuckets& buckets = *buckets_[static_cast<std::size_t>(group * options_.parallel.stages + stage)];
    TraceSpan span(options_.trace.get(), track, "all-reduce", "allreduce");
    span.arg("bucket", bucket).arg("bytes", buckets.bucket(bucket).flat.nbytes());
    buckets.all_reduce(bucket, *communicators_[static_cast<std::size_t>(stage)], global_group(group),
                       options_.parallel.algorithm);
}

}  // namespace tandem

#include "parallel/program.h"

#include <algorithm>

#include "base/error.h"
#include "parallel/buckets.h"

namespace tandem {

std::string_view op_name(OpKind kind) {
    switch (kind) {
        case OpKind::load_input: return "input";
        case OpKind::receive_activation: return "receive activation";
        case OpKind::forward: return "forward";
        case OpKind::loss: return "loss";
        case OpKind::send_activation: return "send activation";
        case OpKind::loss_gradient: return "loss gradient";
        case OpKind::receive_gradient: return "receive gradient";
        case OpKind::recompute: return "recompute";
        case OpKind::backward: return "backward";
        case OpKind::stash_gradients: return "stash gradients";
        case OpKind::send_gradient: return "send gradient";
        case OpKind::sum_gradients: return "sum gradients";
        case OpKind::all_reduce: return "all-reduce";
        case OpKind::wait_lane: return "wait for all-reduce";
        case OpKind::unscale_gradients: return "unscale gradients";
        case OpKind::gradient_norm: return "gradient norm";
        case OpKind::barrier: return "barrier";
        case OpKind::update: return "optimizer";
        case OpKind::average_weights: return "average weights";
        case OpKind::fold_batch_norm: return "batch-norm statistics";
    }
    return "?";
}

std::string_view op_category(OpKind kind) {
    switch (kind) {
        case OpKind::load_input:
        case OpKind::receive_activation:
        case OpKind::send_activation:
        case OpKind::receive_gradient:
        case OpKind::send_gradient: return "transfer";
        case OpKind::forward:
        case OpKind::recompute: return "forward";
        case OpKind::backward: return "backward";
        case OpKind::loss:
        case OpKind::loss_gradient: return "loss";
        case OpKind::stash_gradients:
        case OpKind::sum_gradients: return "gradients";
        case OpKind::all_reduce:
        case OpKind::average_weights: return "allreduce";
        case OpKind::unscale_gradients:
        case OpKind::gradient_norm:
        case OpKind::update:
        case OpKind::fold_batch_norm: return "optimizer";
        case OpKind::wait_lane:
        case OpKind::barrier: return "wait";
    }
    return "?";
}

bool op_traced(OpKind kind) {
    return kind != OpKind::send_activation && kind != OpKind::send_gradient &&
           kind != OpKind::wait_lane && kind != OpKind::barrier;
}

bool stage_recomputes(const ParallelOptions& parallel, int stage) {
    const auto& r = parallel.recompute;
    if (r.empty()) return false;
    return r.size() == 1 ? r.front() : r[static_cast<std::size_t>(stage)];
}

bool reduces_gradients(const ParallelOptions& parallel, int replicas) {
    return replicas > 1 && parallel.average_every == 0;
}

bool reduces_during_backward(const ParallelOptions& parallel, int replicas) {
    return reduces_gradients(parallel, replicas) && parallel.overlap_backward &&
           !parallel.deterministic && parallel.batch_norm != BatchNormMode::sync;
}

bool averages_after(const ParallelOptions& parallel, int replicas, std::int64_t step) {
    return parallel.average_every > 0 && replicas > 1 && (step + 1) % parallel.average_every == 0;
}

StageGraph program_stage_graph(const ProgramSpec& spec) {
    return spec.graph.stages.empty() ? chain_stage_graph(spec.bounds, spec.boundary_bytes)
                                     : spec.graph;
}

std::vector<StageBucket> stage_buckets(const ProgramSpec& spec, int stage) {
    return stage_buckets(spec, program_stage_graph(spec).stage(stage));
}

std::vector<StageBucket> stage_buckets(const ProgramSpec& spec, const StageNode& node) {
    // The stage's parameter tensors in backward order (last layer first, each layer's last
    // tensor first), as the engine lists them for GradientBuckets.
    std::vector<std::size_t> bytes, layer_of;
    for (std::size_t i = node.layer_end; i-- > node.layer_begin;)
        for (auto it = spec.parameter_bytes[i].rbegin(); it != spec.parameter_bytes[i].rend(); ++it)
            bytes.push_back(*it), layer_of.push_back(i);
    std::vector<StageBucket> buckets;
    for (const auto& members : bucket_groups(bytes, spec.parallel.bucket_bytes)) {
        StageBucket b;
        for (std::size_t k : members) b.bytes += bytes[k];
        b.completed_by = layer_of[members.back()];
        buckets.push_back(b);
    }
    return buckets;
}

namespace {

void check_spec(const ProgramSpec& spec) {
    const ParallelOptions& p = spec.parallel;
    TANDEM_CHECK_AS(ConfigError, p.groups >= 1 && p.stages >= 1 && p.micro_batches >= 1)
        << "a stage program needs at least one group, stage and micro-batch; given " << p.groups
        << ", " << p.stages << ", " << p.micro_batches;
    if (!spec.graph.stages.empty()) {
        TANDEM_CHECK_AS(ConfigError, spec.bounds.empty() && spec.boundary_bytes.empty())
            << "a stage program takes a chain's bounds or a stage graph, not both";
        TANDEM_CHECK_AS(ConfigError, spec.graph.stages.size() == static_cast<std::size_t>(p.stages))
            << p.stages << " stages, but the stage graph has " << spec.graph.stages.size();
        check_stage_graph(spec.graph, spec.parameter_bytes.size());
        return;
    }
    TANDEM_CHECK_AS(ConfigError, spec.bounds.size() == static_cast<std::size_t>(p.stages) + 1 &&
                                     spec.bounds.front() == 0 &&
                                     spec.bounds.back() == spec.parameter_bytes.size())
        << p.stages << " stages need " << p.stages + 1 << " bounds from 0 to the layer count ("
        << spec.parameter_bytes.size() << "); given " << spec.bounds.size();
    for (std::size_t i = 1; i < spec.bounds.size(); ++i)
        TANDEM_CHECK_AS(ConfigError, spec.bounds[i - 1] < spec.bounds[i])
            << "stage " << i - 1 << " would have no layers: bounds must increase";
    TANDEM_CHECK_AS(ConfigError,
                    spec.boundary_bytes.empty() || spec.boundary_bytes.size() == spec.bounds.size())
        << "boundary_bytes needs one entry per bound (" << spec.bounds.size() << "); given "
        << spec.boundary_bytes.size();
}

// Builds one device's program; the pieces every kind of run shares.
class ProgramWriter {
public:
    ProgramWriter(const ProgramSpec& spec, const StageGraph& graph, int depth, int group, int stage)
        : spec_(spec), p_(spec.parallel), graph_(graph), node_(graph.stage(stage)), depth_(depth),
          group_(group), stage_(stage), begin_(node_.layer_begin), end_(node_.layer_end) {}

    DeviceProgram write() {
        const bool train = spec_.mode == Mode::train;
        if (train && p_.batch_norm == BatchNormMode::sync) {
            write_together();
        } else {
            write_pipelined(train);
        }
        if (train) write_update();
        return DeviceProgram{group_, stage_, std::move(ops_)};
    }

private:
    int device_of(int stage) const { return group_ * p_.stages + stage; }
    void add(Op op) { ops_.push_back(op); }
    // The stage's inputs of micro-batch m, one per input edge.
    void input(int m) {
        for (int id : node_.inputs) {
            const StageEdge& e = graph_.edge(id);
            if (e.from == kBatchInput) {
                add({.kind = OpKind::load_input, .micro_batch = m, .edge = id, .bytes = e.bytes});
            } else {
                add({.kind = OpKind::receive_activation,
                     .micro_batch = m,
                     .peer = device_of(e.from),
                     .edge = id,
                     .bytes = e.bytes});
            }
        }
    }
    // Its output, to every stage that reads it, then to the loss (which keeps it until the
    // loss's gradient: Stage::run lets go of it at the last send otherwise).
    void output(int m) {
        for (int id : node_.outputs)
            if (const StageEdge& e = graph_.edge(id); e.to != kLoss)
                add({.kind = OpKind::send_activation,
                     .micro_batch = m,
                     .peer = device_of(e.to),
                     .edge = id,
                     .bytes = e.bytes});
        for (int id : node_.outputs)
            if (graph_.edge(id).to == kLoss)
                add({.kind = OpKind::loss, .micro_batch = m, .edge = id});
    }
    // The gradient of its output: the loss's first (computed here, no wait), then each
    // reader's, summed in this order (Stage::run), so the sum is the same on every run.
    void output_gradient(int m) {
        for (int id : node_.outputs)
            if (graph_.edge(id).to == kLoss)
                add({.kind = OpKind::loss_gradient, .micro_batch = m, .edge = id});
        for (int id : node_.outputs)
            if (const StageEdge& e = graph_.edge(id); e.to != kLoss)
                add({.kind = OpKind::receive_gradient,
                     .micro_batch = m,
                     .peer = device_of(e.to),
                     .edge = id,
                     .bytes = e.bytes});
    }
    // The gradient of each input, back to the stage it came from (nobody reads the images').
    void input_gradient(int m) {
        for (int id : node_.inputs)
            if (const StageEdge& e = graph_.edge(id); e.from != kBatchInput)
                add({.kind = OpKind::send_gradient,
                     .micro_batch = m,
                     .peer = device_of(e.from),
                     .edge = id,
                     .bytes = e.bytes});
    }
    void layers(OpKind kind, int m, std::size_t begin, std::size_t end, bool keep = true) {
        add({.kind = kind,
             .micro_batch = m,
             .layer_begin = begin,
             .layer_end = end,
             .keeps_activations = keep});
    }
    void all_reduce(std::size_t bucket, bool on_lane) {
        add({.kind = OpKind::all_reduce,
             .bucket = static_cast<int>(bucket),
             .on_lane = on_lane,
             .bytes = buckets_[bucket].bytes});
    }

    void write_pipelined(bool train) {
        const int micro_batches = p_.micro_batches;
        const bool recompute = train && stage_recomputes(p_, stage_);
        const bool reduce = train && reduces_gradients(p_, spec_.replicas);
        const bool overlap = train && reduces_during_backward(p_, spec_.replicas);
        const bool deterministic = train && p_.deterministic;
        if (reduce) buckets_ = stage_buckets(spec_, node_);
        std::vector<StageOp> order;
        if (train) {
            order = stage_ops_at_depth(p_.pipeline, depth_, micro_batches);
        } else {
            for (int m = 0; m < micro_batches; ++m) order.push_back({StageOp::forward, m});
        }
        const auto final_backward =
            std::find_if(order.rbegin(), order.rend(),
                         [](const StageOp& op) { return op.kind == StageOp::backward; });
        for (const StageOp& op : order) {
            const int m = op.micro_batch;
            if (op.kind == StageOp::forward) {
                input(m);
                layers(OpKind::forward, m, begin_, end_, !recompute);
                output(m);
                continue;
            }
            output_gradient(m);
            if (recompute) layers(OpKind::recompute, m, begin_, end_);
            if (overlap && &op == &*final_backward) {
                backward_posting_buckets(m);
            } else {
                layers(OpKind::backward, m, begin_, end_);
            }
            if (deterministic) add({.kind = OpKind::stash_gradients, .micro_batch = m});
            input_gradient(m);
        }
        if (deterministic) add({.kind = OpKind::sum_gradients});
        if (overlap) {
            add({.kind = OpKind::wait_lane});
        } else if (reduce) {
            for (std::size_t b = 0; b < buckets_.size(); ++b) all_reduce(b, false);
        }
    }

    // The last backward in pieces: down to the layer that completes each bucket, then the
    // bucket posted to the lane, while the worker goes on with the layers below.
    void backward_posting_buckets(int m) {
        std::size_t layer = end_;
        for (std::size_t b = 0; b < buckets_.size(); ++b) {
            if (buckets_[b].completed_by < layer) {
                layers(OpKind::backward, m, buckets_[b].completed_by, layer);
                layer = buckets_[b].completed_by;
            }
            all_reduce(b, true);
        }
        if (layer > begin_) layers(OpKind::backward, m, begin_, layer);
    }

    // Synchronised batch norm: the micro-batches of the stage together, layer by layer (the
    // statistics are exchanged inside the forward and backward, per batch-norm layer).
    void write_together() {
        const int micro_batches = p_.micro_batches;
        const bool reduce = reduces_gradients(p_, spec_.replicas);
        if (reduce) buckets_ = stage_buckets(spec_, node_);
        for (int m = 0; m < micro_batches; ++m) input(m);
        layers(OpKind::forward, kEveryMicroBatch, begin_, end_);
        for (int m = 0; m < micro_batches; ++m) output(m);
        for (int m = 0; m < micro_batches; ++m) output_gradient(m);
        layers(OpKind::backward, kEveryMicroBatch, begin_, end_);
        for (int m = 0; m < micro_batches; ++m) input_gradient(m);
        if (reduce)
            for (std::size_t b = 0; b < buckets_.size(); ++b) all_reduce(b, false);
    }

    void write_update() {
        if (spec_.unscale_gradients) add({.kind = OpKind::unscale_gradients});
        if (spec_.clip_gradients) add({.kind = OpKind::gradient_norm});
        add({.kind = OpKind::barrier});
        add({.kind = OpKind::update});
        if (averages_after(p_, spec_.replicas, spec_.step)) add({.kind = OpKind::average_weights});
        if (p_.batch_norm == BatchNormMode::deferred) add({.kind = OpKind::fold_batch_norm});
    }

    const ProgramSpec& spec_;
    const ParallelOptions& p_;
    const StageGraph& graph_;
    const StageNode& node_;
    const int depth_, group_, stage_;
    const std::size_t begin_, end_;
    std::vector<StageBucket> buckets_;
    std::vector<Op> ops_;
};

}  // namespace

std::vector<DeviceProgram> build_programs(const ProgramSpec& spec) {
    check_spec(spec);
    const StageGraph graph = program_stage_graph(spec);
    const std::vector<int> depths = stage_depths(graph);
    std::vector<DeviceProgram> programs;
    for (int g = 0; g < spec.parallel.groups; ++g)
        for (int s = 0; s < spec.parallel.stages; ++s)
            programs.push_back(
                ProgramWriter(spec, graph, depths[static_cast<std::size_t>(s)], g, s).write());
    return programs;
}

}  // namespace tandem

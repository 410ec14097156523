#include "engine/engine.h"

#include <algorithm>
#include <future>

#include "base/rng.h"
#include "engine/engine_internal.h"
#include "parallel/mpi_world.h"
#include "plan/partitioner.h"
#include "plan/profiler.h"

namespace tandem {
namespace {

// The loss says what targets it takes (class labels or values shaped as the output).
void check_batch(const Tensor& images, const Tensor& targets, const Loss& loss) {
    TANDEM_CHECK_AS(ShapeError, images.defined()) << "a batch needs images";
    TANDEM_CHECK_AS(ShapeError, images.shape().rank() >= 2 && images.dtype() == DType::f32)
        << "images must be f32 with a batch dimension, got " << images.description();
    loss.check_batch_targets(targets, images.shape()[0]);
    // An empty batch has no mean loss (and would split into empty micro-batches).
    TANDEM_CHECK_AS(ShapeError, images.shape()[0] > 0)
        << "the batch is empty: images " << images.description();
}

// Stage boundaries: 0, the cuts, the layer count. Without cuts, stages of nearly equal layer
// counts.
std::vector<std::size_t> stage_bounds(std::size_t layers, int stages,
                                      const std::vector<std::size_t>& cuts) {
    const auto s = static_cast<std::size_t>(stages);
    TANDEM_CHECK_AS(ConfigError, s <= layers)
        << "Engine: " << stages << " stages need at least as many layers to cut; the net has "
        << layers;
    std::vector<std::size_t> bounds{0};
    if (cuts.empty()) {
        for (std::size_t i = 1; i < s; ++i) bounds.push_back(layers * i / s);
    } else {
        TANDEM_CHECK_AS(ConfigError, cuts.size() == s - 1)
            << "Engine: " << stages << " stages need " << s - 1 << " cuts; given " << cuts.size();
        for (std::size_t c : cuts) {
            TANDEM_CHECK_AS(ConfigError, c > bounds.back() && c < layers)
                << "Engine: cut " << c << " must come after " << bounds.back()
                << " and before the last layer (" << layers << " layers); cuts must increase";
            bounds.push_back(c);
        }
    }
    bounds.push_back(layers);
    return bounds;
}

// The averaging algorithm's options: each only with the algorithm it belongs to, and the
// algorithm only with average_every (a mistake otherwise, said naming the option).
void check_averaging(const ParallelOptions& p) {
    const ParallelOptions defaults;
    const std::string algorithm(averaging_algorithm_name(p.averaging));
    TANDEM_CHECK_AS(ConfigError, p.averaging == AveragingAlgorithm::plain || p.average_every > 0)
        << "Engine: parallel.averaging = '" << algorithm
        << "' needs parallel.average_every > 0 (the steps between averages); without it the groups "
           "train by "
           "synchronous SGD";
    auto only_with = [&](bool changed, const char* option, AveragingAlgorithm owner) {
        TANDEM_CHECK_AS(ConfigError, !changed || p.averaging == owner)
            << "Engine: parallel." << option << " is an option of averaging = '"
            << averaging_algorithm_name(owner) << "', not of averaging = '" << algorithm << "'";
    };
    only_with(p.block_momentum != defaults.block_momentum, "block_momentum",
              AveragingAlgorithm::bmuf);
    only_with(p.block_lr != defaults.block_lr, "block_lr", AveragingAlgorithm::bmuf);
    only_with(p.block_nesterov != defaults.block_nesterov, "block_nesterov",
              AveragingAlgorithm::bmuf);
    only_with(p.elastic_alpha != defaults.elastic_alpha, "elastic_alpha",
              AveragingAlgorithm::easgd);
}

// C x H x W of a batch N x C x H x W.
Shape sample_shape(const Tensor& images) {
    std::vector<std::int64_t> dims(images.shape().dims().begin() + 1, images.shape().dims().end());
    return Shape(dims);
}

// Waits for every future, then rethrows the first exception among them.
void wait_all(std::vector<std::future<void>>& futures) {
    std::exception_ptr first;
    for (auto& f : futures) {
        try {
            f.get();
        } catch (...) {
            if (!first) first = std::current_exception();
        }
    }
    if (first) std::rethrow_exception(first);
}

}  // namespace

Engine::Engine(EngineOptions options) : options_(std::move(options)) {
    TANDEM_CHECK_AS(ConfigError, options_.net != nullptr) << "Engine: no net given";
    TANDEM_CHECK_AS(ConfigError, options_.net->size() > 0) << "Engine: the net has no layers";
    if (!options_.loss) options_.loss = std::make_shared<CrossEntropy>();
    const ParallelOptions& p = options_.parallel;
    TANDEM_CHECK_AS(ConfigError, p.groups >= 1 && p.stages >= 1 && p.micro_batches >= 1)
        << "Engine: groups, stages and micro-batches must be at least 1; given " << p.groups << ", "
        << p.stages << ", " << p.micro_batches;
    const std::size_t needed = static_cast<std::size_t>(p.groups * p.stages);
    TANDEM_CHECK_AS(ConfigError, options_.devices.size() == needed)
        << "Engine: " << p.groups << " groups x " << p.stages << " stages need " << needed
        << " devices; given " << options_.devices.size();
    for (std::size_t i = 0; i < needed; ++i) {
        TANDEM_CHECK_AS(ConfigError, options_.devices[i] != nullptr)
            << "Engine: device " << i + 1 << " is nil";
        for (std::size_t j = 0; j < i; ++j)
            TANDEM_CHECK_AS(ConfigError, options_.devices[i] != options_.devices[j])
                << "Engine: " << options_.devices[i]->name() << " is given twice; every stage of "
                << "every group needs a device of its own (one worker thread each)";
    }
    TANDEM_CHECK_AS(ConfigError,
                    p.recompute.size() <= 1 || p.recompute.size() == std::size_t(p.stages))
        << "Engine: recompute needs one flag per stage (" << p.stages << ") or one for all; given "
        << p.recompute.size();
    TANDEM_CHECK_AS(ConfigError, p.average_every >= 0)
        << "Engine: average_every must be 0 (synchronous SGD) or a step count, got "
        << p.average_every;
    TANDEM_CHECK_AS(ConfigError, !(p.deterministic && p.average_every > 0))
        << "Engine: deterministic mode covers synchronous SGD; model averaging is not offered with "
           "it";
    check_averaging(p);
    if (p.deterministic) {
        options_.parallel.algorithm = ReduceAlgorithm::tree;
        // Kernels that could sum in a varying order (a GPU's atomics) are passed over.
        for (const auto& d : options_.devices) d->set_deterministic(true);
    }
    if (p.batch_norm == BatchNormMode::sync) {
        TANDEM_CHECK_AS(ConfigError, p.pipeline == PipelineSchedule::gpipe)
            << "Engine: batch_norm = 'sync' needs every micro-batch of a stage at once: use the "
               "gpipe schedule (1f1b would wait on backwards that cannot start)";
        TANDEM_CHECK_AS(ConfigError,
                        p.recompute.empty() || (p.recompute.size() == 1 && !p.recompute[0]))
            << "Engine: batch_norm = 'sync' does not combine with recomputation";
        TANDEM_CHECK_AS(ConfigError, !p.deterministic && p.average_every == 0)
            << "Engine: batch_norm = 'sync' is for synchronous SGD, not deterministic mode or "
               "model averaging";
    }
    TANDEM_CHECK_AS(ConfigError, !(p.auto_split && !p.cuts.empty()))
        << "Engine: give cuts or ask for the automatic split, not both";
    if (!p.placement.empty()) {
        TANDEM_CHECK_AS(ConfigError, !p.auto_split && p.cuts.empty())
            << "Engine: parallel.placement says which layers each stage runs; give it or a split, "
               "not both";
        TANDEM_CHECK_AS(ConfigError, p.placement.size() == static_cast<std::size_t>(p.stages))
            << "Engine: parallel.placement lists " << p.placement.size()
            << " stages, parallel.stages is " << p.stages;
    }
    for (const auto& device : options_.devices) {
        const std::string why = device->precision_unavailable(options_.precision);
        TANDEM_CHECK_AS(ConfigError, why.empty())
            << "Engine: precision = '" << precision_name(options_.precision) << "' cannot run on "
            << device->name() << ": " << why << " (precision = 'fp32' runs everywhere)";
    }
    TANDEM_CHECK_AS(ConfigError, !(scaler_.enabled() && p.average_every > 0 && p.mpi))
        << "Engine: loss scaling does not combine with model averaging under MPI (each process "
           "would skip steps on its own gradients); train by synchronous SGD, or without "
           "loss_scale";
    // Before the groups' replicas are cloned from the net: they copy it.
    options_.net->set_precision(options_.precision);
    options_.net->initialize(options_.seed);
    if (p.mpi) join_processes();
    if (p.average_every > 0 && p.averaging == AveragingAlgorithm::easgd) {
        const double alpha = ModelAverage::effective_elastic_alpha(p, total_groups());
        TANDEM_CHECK_AS(ConfigError, alpha * total_groups() <= 1 + 1e-9)
            << "Engine: parallel.elastic_alpha = " << alpha << " with " << total_groups()
            << " replicas moves the centre past the replicas' mean (alpha x replicas = "
            << alpha * total_groups() << "); give at most " << 1.0 / total_groups()
            << ", or 0 for 0.9 / replicas";
    }
    for (int g = 0; g < p.groups; ++g) {
        auto replica = std::make_unique<Replica>();
        replica->net =
            g == 0 ? options_.net : std::static_pointer_cast<Sequential>(options_.net->clone());
        replica->loss = g == 0 ? options_.loss : options_.loss->clone();
        replica->optimizer = make_optimizer(options_.optimizer);
        replicas_.push_back(std::move(replica));
    }
    if (total_groups() > 1) {
        for (int s = 0; s < p.stages; ++s) communicators_.push_back(make_stage_communicator(s));
    }
    // The automatic split needs the input's shape: it waits for prepare().
    if (!p.placement.empty()) {
        place(place_units(*options_.net, p.placement));
    } else if (!p.auto_split || p.stages == 1) {
        place(chain_units(*options_.net, stage_bounds(options_.net->size(), p.stages, p.cuts)));
    }
}

void Engine::place(UnitPlacement units) {
    const ParallelOptions& p = options_.parallel;
    units_ = std::make_shared<const UnitPlacement>(std::move(units));
    unit_parameter_bytes_ = units_->parameter_bytes(*options_.net);
    const ProgramSpec spec = program_spec(Mode::train, p.groups, p.micro_batches);
    for (int g = 0; g < p.groups; ++g)
        for (int s = 0; s < p.stages; ++s) {
            Replica& replica = *replicas_[static_cast<std::size_t>(g)];
            StageParts parts;
            parts.group = g, parts.stage = s;
            parts.rank = global_group(g), parts.replicas = total_groups();
            parts.device = &stage_device(g, s);
            parts.net = replica.net, parts.loss = replica.loss,
            parts.optimizer = replica.optimizer.get();
            parts.units = units_;
            parts.communicator = communicators_.empty()
                                     ? nullptr
                                     : communicators_[static_cast<std::size_t>(s)].get();
            parts.parallel = &options_.parallel;
            parts.clip_norm = options_.optimizer.clip_norm;
            parts.layout = options_.layout;
            parts.trace = options_.trace.get();
            stages_.push_back(std::make_unique<Stage>(std::move(parts)));
            // The programs post the stage's buckets by index: they must group them as it does.
            const GradientBuckets* buckets = stages_.back()->buckets();
            TANDEM_CHECK(!buckets || stage_buckets(spec, s).size() == buckets->size())
                << "stage " << s
                << ": the stage program's gradient buckets differ from the engine's";
        }
    if (processes_ > 1) broadcast_weights();
    if (!pending_average_.empty()) {
        for (const auto& st : stages_)
            if (ModelAverage* average = st->model_average()) average->load_state(pending_average_);
        pending_average_.clear();
    }
}

void Engine::prepare(const Shape& sample, std::int64_t batch) {
    TANDEM_CHECK_AS(ConfigError, batch >= 1)
        << "prepare: the batch must be at least 1 sample, got " << batch;
    // The net must take batches of such samples (a convolution wants C x H x W): a wrong shape
    // is the caller's mistake, said now rather than at the first step.
    std::vector<std::int64_t> dims{batch};
    dims.insert(dims.end(), sample.dims().begin(), sample.dims().end());
    try {
        (void)options_.net->output_shape(Shape(dims));
    } catch (Error& e) {
        e.add_context("prepare: samples of shape " + sample.to_string() + " do not fit the net");
        throw;
    }
    place_for(sample, batch);
}

void Engine::place_for(const Shape& sample, std::int64_t batch) {
    if (prepared()) return;
    // A graph's nodes are units of their own, so that its branches can go on stages of their own.
    const Opening opening = kAutoSplitOpening;
    std::vector<std::size_t> cuts = auto_cuts(sample, batch, opening);
    // Under MPI each rank profiled for itself: rank 0's choice holds for all.
    if (processes_ > 1) {
        std::vector<std::uint64_t> shared(cuts.begin(), cuts.end());
        mpi::broadcast(shared.data(), shared.size() * sizeof(std::uint64_t), 0);
        cuts.assign(shared.begin(), shared.end());
    }
    // Placed by names, so that only the graphs a cut falls in are opened: cuts between
    // top-level layers give the chain of top-level layers, as before.
    Sequential& net = *options_.net;
    const std::size_t units = chain_unit_count(net, opening);
    const UnitPlacement cut =
        chain_units(net, stage_bounds(units, options_.parallel.stages, cuts), opening);
    place(place_units(net, cut.stage_names(net)));
}

std::vector<std::size_t> Engine::auto_cuts(const Shape& sample, std::int64_t batch,
                                           Opening opening) {
    const ParallelOptions& p = options_.parallel;
    const std::int64_t micro = std::max<std::int64_t>(1, batch / (p.groups * p.micro_batches));
    ProfileOptions po;
    po.layout = options_.layout;
    po.seed = options_.seed;
    // Profiling runs a copy: the net's own weights stay where they are.
    auto copy = std::static_pointer_cast<Sequential>(options_.net->clone());
    const UnitPlacement units = all_units(*copy, opening);
    const NetProfile profile =
        profile_net(*copy, units, *options_.loss, stage_device(0, 0), sample, micro, po);
    const std::vector<LayerCost> costs = layer_costs(profile, options_.optimizer.state_buffers());
    PartitionOptions o;
    o.stages = p.stages;
    o.schedule = p.pipeline;
    o.micro_batches = p.micro_batches;
    for (int s = 0; s < p.stages; ++s) o.caps.push_back(stage_device(0, s).allocator().stats().cap);
    const Partition partition = best_partition(costs, o);
    partition_text_ = format_partition(partition, costs);
    return partition.cuts;
}

Engine::~Engine() = default;

std::size_t Engine::stage_begin(int stage) const {
    return placed().graph.stage(stage).layer_begin;
}

std::size_t Engine::stage_end(int stage) const {
    return placed().graph.stage(stage).layer_end;
}

std::vector<std::string> Engine::stage_layer_names(int stage) const {
    return placed().stage_unit_names(stage);
}

const UnitPlacement& Engine::placed() const {
    TANDEM_CHECK(units_ != nullptr) << "the engine has not placed its stages yet (prepare() does)";
    return *units_;
}

Device& Engine::stage_device(int group, int stage) const {
    return *options_.devices[static_cast<std::size_t>(group * options_.parallel.stages + stage)];
}

float Engine::current_lr() const {
    return options_.schedule ? options_.schedule->lr(step_) : options_.optimizer.lr();
}

Stage& Engine::stage(int group, int stage) const {
    return *stages_[static_cast<std::size_t>(group * options_.parallel.stages + stage)];
}

StepResult Engine::step(const Tensor& images, const Tensor& labels) {
    check_batch(images, labels, *options_.loss);
    const ParallelOptions& p = options_.parallel;
    const std::int64_t n = images.shape()[0];
    TANDEM_CHECK_AS(ConfigError, n >= p.groups * p.micro_batches)
        << "a batch of " << n << " cannot feed " << p.groups << " groups x " << p.micro_batches
        << " micro-batches (every micro-batch needs a sample)";
    place_for(sample_shape(images), n);
    StepPlan plan(Mode::train, p.groups, p.micro_batches, edge_count(), images, labels);
    plan.rng = rng_key(options_.seed, static_cast<std::uint64_t>(step_));
    plan.step = step_ + 1;
    const auto [offset, global_batch] = share_batch(n);
    plan.sample_offset = offset;
    plan.loss_scale = 1.0f / static_cast<float>(global_batch);
    if (p.batch_norm == BatchNormMode::deferred)
        plan.statistics.resize(static_cast<std::size_t>(p.groups * p.stages));
    plan.gradient_squares.assign(static_cast<std::size_t>(p.groups * p.stages), 0.0);
    plan.gradient_scale = scaler_.scale();
    if (scaler_.enabled())
        plan.gradients_finite.assign(static_cast<std::size_t>(p.groups * p.stages), 1);
    plan.track_added_loss(p.stages);
    run(plan);

    // Every worker has finished its backward and all-reduce: only now do weights change, so a
    // step that failed anywhere changed none.
    StepResult result;
    result.lr = current_lr();
    std::vector<std::future<void>> updates;
    for (int s = 0; s < p.stages; ++s) {
        std::vector<Stage*> copies;  // stage s of every group, for what they merge
        for (int g = 0; g < p.groups; ++g) copies.push_back(&stage(g, s));
        for (int g = 0; g < p.groups; ++g)
            updates.push_back(stage_device(g, s).worker().submit(
                [&plan, copies, g, index = g * p.stages + s, lr = result.lr] {
                    copies[static_cast<std::size_t>(g)]->update(plan, plan.program(index), lr,
                                                                copies);
                }));
    }
    wait_all(updates);

    LossSums total;
    for (const auto& s : plan.sums)
        total.loss += s.loss, total.correct += s.correct, total.count += s.count;
    result.samples = total.count;
    const double added = plan.added_loss_total();
    result.added_loss = added / static_cast<double>(total.count);
    result.loss = (total.loss + added) / static_cast<double>(total.count);
    if (options_.loss->has_accuracy())
        result.accuracy = static_cast<double>(total.correct) / static_cast<double>(total.count);
    if (options_.optimizer.clip_norm > 0) result.grad_norm = group_gradient_norm(plan, 0, p.stages);
    ++step_;
    if (scaler_.enabled()) {
        result.loss_scale = scaler_.scale();
        result.skipped = !all_gradients_finite(plan);
        try {
            scaler_.record(!result.skipped);
        } catch (Error& e) {
            e.add_context("at step " + std::to_string(step_));
            throw;
        }
    }
    return result;
}

LossSums Engine::evaluate_batch(const Tensor& images, const Tensor& labels) {
    check_batch(images, labels, *options_.loss);
    return processes_ > 1 ? evaluate_share(images, labels) : evaluate_local(images, labels);
}

LossSums Engine::evaluate_local(const Tensor& images, const Tensor& labels) {
    const ParallelOptions& p = options_.parallel;
    const int n = static_cast<int>(std::min<std::int64_t>(images.shape()[0], 1 << 30));
    const int groups = std::max(1, std::min(p.groups, n));
    const int micro_batches = std::max(1, std::min(p.micro_batches, n / groups));
    place_for(sample_shape(images), images.shape()[0]);
    StepPlan plan(Mode::eval, groups, micro_batches, edge_count(), images, labels);
    plan.step = step_;
    plan.track_added_loss(p.stages);
    run(plan);
    LossSums total;
    for (const auto& s : plan.sums)
        total.loss += s.loss, total.correct += s.correct, total.count += s.count;
    total.loss += plan.added_loss_total();
    return total;
}

ProgramSpec Engine::program_spec(Mode mode, int groups, int micro_batches) const {
    ProgramSpec spec;
    spec.mode = mode;
    spec.parallel = options_.parallel;
    spec.parallel.groups = groups;
    spec.parallel.micro_batches = micro_batches;
    spec.graph = placed().graph;
    spec.parameter_bytes = unit_parameter_bytes_;
    spec.replicas = mode == Mode::train ? total_groups() : 1;
    spec.step = step_;
    spec.clip_gradients = options_.optimizer.clip_norm > 0;
    spec.unscale_gradients = scaler_.enabled();
    return spec;
}

std::shared_ptr<const std::vector<DeviceProgram>> Engine::programs(Mode mode, int groups,
                                                                   int micro_batches) {
    // A run's programs depend on the step only through model averaging: a few kinds of run,
    // each built once rather than on every step.
    const bool averages =
        mode == Mode::train && averages_after(options_.parallel, total_groups(), step_);
    auto& cached = programs_[{mode == Mode::train, groups, micro_batches, averages}];
    if (!cached)
        cached = std::make_shared<const std::vector<DeviceProgram>>(
            build_programs(program_spec(mode, groups, micro_batches)));
    return cached;
}

void Engine::run(StepPlan& plan) {
    plan.programs = programs(plan.mode, plan.groups, plan.micro_batches);
    std::vector<std::future<void>> done;
    for (int g = 0; g < plan.groups; ++g)
        for (int s = 0; s < options_.parallel.stages; ++s)
            done.push_back(stage_device(g, s).worker().submit([this, &plan, g, s] {
                Stage& mine = stage(g, s);
                try {
                    mine.run(plan, plan.program(g * options_.parallel.stages + s));
                } catch (...) {
                    const std::string reason = plan.board.fail(std::current_exception());
                    for (auto& c : communicators_) c->abort(reason);
                    // Its lane's collectives now throw rather than wait: let them end before the
                    // communicators are reset for the next step.
                    mine.drain_lane();
                    throw;
                }
            }));
    for (auto& f : done) f.wait();  // each failure is on the board, the first real one first
    if (auto error = plan.board.first_error()) {
        for (auto& c : communicators_) c->reset();
        std::rethrow_exception(error);
    }
}

}  // namespace tandem

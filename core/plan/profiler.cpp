#include "plan/profiler.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "base/error.h"
#include "base/rng.h"
#include "device/device.h"
#include "layers/merge.h"
#include "optim/sgd.h"

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The time now, once `device` has finished the work queued so far: a GPU's kernels run after
// their launches return, so a clock read without this times the launches. Free on the CPU.
Clock::time_point settled_now(Device& device) {
    device.synchronize();
    return Clock::now();
}

double ms_since(Device& device, Clock::time_point start) {
    device.synchronize();
    return ms_since(start);
}

// The q-quantile, interpolated between neighbours (q = 0.5: the median).
double quantile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double at = q * static_cast<double>(v.size() - 1);
    const auto below = static_cast<std::size_t>(at);
    const std::size_t above = std::min(below + 1, v.size() - 1);
    return v[below] + (v[above] - v[below]) * (at - static_cast<double>(below));
}

}  // namespace

NetProfile profile_net(Sequential& net, Loss& loss, Device& device, const Shape& input,
                       std::int64_t batch, const ProfileOptions& o) {
    TANDEM_CHECK_AS(ConfigError, net.size() > 0) << "the net has no layers to profile";
    return profile_net(net, all_units(net), loss, device, input, batch, o);
}

NetProfile profile_net(Sequential& net, const UnitPlacement& placed, Loss& loss, Device& device,
                       const Shape& input, std::int64_t batch, const ProfileOptions& o) {
    std::vector<std::int64_t> dims{batch};
    dims.insert(dims.end(), input.dims().begin(), input.dims().end());
    const Shape x_shape(dims);
    const Shape out_shape = net.output_shape(x_shape);
    const std::int64_t classes = o.classes > 0 ? o.classes : out_shape[1];
    GraphPart part = placed.part(net, 0, placed.units.size(), {placed.loss_value});
    std::vector<Shape> value_shapes(placed.values);  // from the first forward

    NetProfile profile;
    profile.batch = batch;
    profile.input = x_shape;
    const std::size_t n = placed.units.size();
    std::vector<std::vector<double>> fwd(n), bwd(n);
    std::vector<std::size_t> transient(n, 0);
    std::size_t step_peak = 0;  // the peak over whole steps, from the per-layer peaks
    Allocator& allocator = device.allocator();
    // Peak use during `run` above what was in use before it or after it.
    auto scratch = [&](std::size_t layer, auto&& run) {
        const std::size_t before = allocator.stats().in_use;
        allocator.reset_peak();
        run();
        const MemoryStats after = allocator.stats();
        // Above the lower of the two: the larger of the gradients coming in and going out (or
        // the output) is part of what a layer needs while it runs.
        const std::size_t kept = std::min(before, after.in_use);
        step_peak = std::max(step_peak, after.peak);
        transient[layer] = std::max(transient[layer], after.peak > kept ? after.peak - kept : 0);
    };
    std::vector<double> step_times, update_times;

    device.worker().run([&] {
        net.to(device);
        std::vector<float> xv(static_cast<std::size_t>(x_shape.numel()));
        for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = rng_normal(o.seed, i);
        const Layout layout = x_shape.rank() == 4 ? o.layout : Layout::contiguous;
        const Tensor x = Tensor::from_vector(x_shape, device, xv, layout);
        const Tensor labels = loss.example_targets(out_shape, classes, o.seed + 1, device);
        Sgd sgd(SgdOptions{0.01f, 0.9f, 0.f, 0.f, false});
        const auto params = named_parameters(net);

        // A GPU runs ahead of its launches, so timing each layer needs a synchronisation
        // around it that a training step does not make: there the whole step is timed again,
        // in as many steps of its own, synchronised only at their ends.
        const bool free_steps = !device.host_accessible();
        const int layer_steps = o.warmup + o.iterations;
        std::optional<Clock::time_point> next_step_start;  // from after_step: a barrier's release
        for (int it = 0; it < layer_steps + (free_steps ? o.iterations : 0); ++it) {
            const bool timed = it >= o.warmup && it < layer_steps;
            const bool step_timed = free_steps ? it >= layer_steps : timed;
            // Settles the device and reads the clock, when this step times its layers.
            auto layer_clock = [&] {
                return it < layer_steps ? settled_now(device) : Clock::time_point{};
            };
            Tape tape;
            Pass pass{device, Mode::train, 0, tape,
                      rng_key(o.seed, static_cast<std::uint64_t>(it))};
            Optimizer::zero_grad(params);
            const auto step_start = next_step_start ? *next_step_start : settled_now(device);
            std::vector<Tensor> values(placed.values), grads(placed.values);
            values[kBatchValue] = x;
            for (std::size_t i = 0; i < n; ++i) {
                const auto t0 = layer_clock();
                scratch(i, [&] { part.forward(values, pass, i, i + 1); });
                if (timed) fwd[i].push_back(ms_since(device, t0));
            }
            for (std::size_t v = 0; v < values.size(); ++v) value_shapes[v] = values[v].shape();
            const Tensor& output = values[placed.loss_value];
            loss.forward(output, labels, pass);
            grads[placed.loss_value] =
                loss.backward(output, labels, 1.0f / static_cast<float>(batch), pass);
            for (std::size_t i = n; i-- > 0;) {
                const auto t0 = layer_clock();
                // As the engine runs it: no gradient for the images (the part's nodes know).
                scratch(i, [&] { part.backward(values, grads, pass, i, i + 1); });
                if (timed) bwd[i].push_back(ms_since(device, t0));
            }
            const auto u0 = layer_clock();
            sgd.step(params, 0.01f);
            if (timed) update_times.push_back(ms_since(device, u0));
            if (o.after_step) next_step_start = o.after_step();
            if (step_timed) step_times.push_back(ms_since(device, step_start));
        }
    });
    profile.peak_bytes = step_peak;

    const auto first_reads = placed.first_reads();
    for (std::size_t i = 0; i < n; ++i) {
        const NetUnit& unit = placed.units[i];
        Layer& layer = unit_layer(net, unit);
        std::vector<Shape> in;
        for (std::size_t v : unit.inputs) in.push_back(value_shapes[v]);
        LayerProfile lp;
        lp.name = unit.name;
        lp.kind = std::string(layer.kind());
        lp.options = layer.options_text();
        lp.output = value_shapes[unit.value];
        lp.parameters = parameter_count(layer);
        lp.forward_ms = quantile(fwd[i], o.quantile);
        lp.backward_ms = quantile(bwd[i], o.quantile);
        lp.flops = node_flops(layer, in);
        lp.memory = node_memory(layer, in);
        lp.parameter_tensor_bytes = parameter_tensor_bytes(layer);
        lp.transient_bytes = transient[i];
        for (std::size_t v : first_reads[i])
            lp.kept_input_bytes +=
                static_cast<std::size_t>(value_shapes[v].numel()) * sizeof(float);
        profile.train_flops += 3 * lp.flops;
        profile.layers.push_back(lp);
    }
    profile.step_ms = quantile(step_times, o.quantile);
    profile.update_ms = quantile(update_times, o.quantile);
    return profile;
}

}  // namespace tandem

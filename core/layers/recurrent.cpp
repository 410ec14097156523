#include "layers/recurrent.h"

#include <cmath>

#include "base/rng.h"

namespace tandem {
namespace {

// N x T x F (batch first) to T*N x F (step t in rows [t N, (t + 1) N)), and back.
Tensor to_time_major(const Tensor& x, Device& device) {
    const std::int64_t n = x.shape()[0], steps = x.shape()[1], f = x.shape()[2];
    Tensor out = Tensor::empty({steps * n, f}, device);
    for (std::int64_t t = 0; t < steps; ++t)
        tensor_ops(device).copy_rows(x, out, RowCopy{n, f, t * f, steps * f, t * n * f, f});
    return out;
}

Tensor to_batch_major(const Tensor& y, std::int64_t n, std::int64_t steps, Device& device) {
    const std::int64_t f = y.shape()[1];
    Tensor out = Tensor::empty({n, steps, f}, device);
    for (std::int64_t t = 0; t < steps; ++t)
        tensor_ops(device).copy_rows(y, out, RowCopy{n, f, t * n * f, f, t * f, steps * f});
    return out;
}

Tensor zeros(const Shape& shape, Device& device) {
    Tensor t = Tensor::empty(shape, device);
    tensor_ops(device).fill(t, 0);
    return t;
}

}  // namespace

Recurrent::Recurrent(const RecurrentOptions& o) : options_(o) {
    const char* kind = o.cell == RnnCellKind::lstm ? "LSTM" : "GRU";
    TANDEM_CHECK_AS(ConfigError, o.input_size > 0)
        << kind << ": input_size must be positive, got " << o.input_size;
    TANDEM_CHECK_AS(ConfigError, o.hidden_size > 0)
        << kind << ": hidden_size must be positive, got " << o.hidden_size;
    TANDEM_CHECK_AS(ConfigError, o.layers > 0)
        << kind << ": layers must be positive, got " << o.layers;
    const std::int64_t g = gates() * o.hidden_size;
    for (std::int64_t k = 0; k < o.layers; ++k) {
        const std::string l = "_l" + std::to_string(k);
        weights_.push_back({make_parameter("weight_ih" + l, {g, layer_input(k)}, true),
                            make_parameter("weight_hh" + l, {g, o.hidden_size}, true),
                            o.bias ? make_parameter("bias_ih" + l, {g}, false) : Parameter{},
                            o.bias ? make_parameter("bias_hh" + l, {g}, false) : Parameter{}});
    }
    initialize(0);
}

std::string Recurrent::options_text() const {
    std::string text =
        std::to_string(options_.input_size) + "->" + std::to_string(options_.hidden_size);
    if (options_.layers > 1) text += ", " + std::to_string(options_.layers) + " layers";
    if (!options_.bias) text += ", no bias";
    text += options_.last_only ? ", last step" : ", sequence";
    return text;
}

std::vector<Parameter*> Recurrent::parameters() {
    std::vector<Parameter*> out;
    for (auto& w : weights_) {
        out.push_back(&w.w_ih);
        out.push_back(&w.w_hh);
        if (options_.bias) {
            out.push_back(&w.b_ih);
            out.push_back(&w.b_hh);
        }
    }
    return out;
}

void Recurrent::initialize(std::uint64_t seed) {
    // PyTorch's: every weight and bias uniform in +-1/sqrt(hidden).
    const float bound = 1.f / std::sqrt(static_cast<float>(options_.hidden_size));
    for (Parameter* p : parameters()) {
        std::vector<float> v(static_cast<std::size_t>(p->value.numel()));
        const std::uint64_t key = rng_key(seed, p->name);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = bound * (2.f * rng_uniform(key, i) - 1.f);
        p->value.copy_from(v);
    }
}

Shape Recurrent::merged_shape(const std::vector<Shape>& inputs) const {
    check_input_count(inputs.size());
    const Shape& x = inputs[0];
    TANDEM_CHECK_AS(ShapeError, x.rank() == 3 && x[2] == options_.input_size && x[1] >= 1)
        << label() << ": the input must be N x steps x " << options_.input_size
        << " (batch first), got " << x.to_string();
    const std::int64_t n = x[0], h = options_.hidden_size, layers = options_.layers;
    for (std::size_t i = 1; i < inputs.size(); ++i) {
        const Shape& s = inputs[i];
        const bool fits = s == Shape{n, layers, h} || (layers == 1 && s == Shape{n, h});
        TANDEM_CHECK_AS(ShapeError, fits)
            << label() << ": the initial " << (i == 1 ? "hidden state h0" : "cell state c0")
            << " must be " << Shape{n, layers, h}.to_string()
            << (layers == 1 ? " or " + Shape{n, h}.to_string() : std::string())
            << " (N x layers x hidden, batch first), got " << s.to_string();
    }
    return options_.last_only ? Shape{n, h} : Shape{n, x[1], h};
}

MemoryEstimate Recurrent::merged_memory(const std::vector<Shape>& inputs) const {
    MemoryEstimate e = Merge::merged_memory(inputs);
    const std::int64_t rows = inputs[0][0] * inputs[0][1], h = options_.hidden_size;
    const std::int64_t cell = options_.cell == RnnCellKind::lstm ? h : 0;
    for (std::int64_t k = 0; k < options_.layers; ++k)
        e.saved_bytes += static_cast<std::size_t>(
                             rows * (layer_input(k) + h + cell + RnnCellKernel::kSavedGates * h)) *
                         sizeof(float);
    return e;
}

double Recurrent::merged_flops(const std::vector<Shape>& inputs) const {
    const double rows = static_cast<double>(inputs[0][0] * inputs[0][1]);
    const double g = static_cast<double>(gates() * options_.hidden_size);
    double total = 0;
    for (std::int64_t k = 0; k < options_.layers; ++k)
        total += 2.0 * rows * g * static_cast<double>(layer_input(k) + options_.hidden_size);
    return total;
}

LinearKernel& Recurrent::projection(Device& device, std::int64_t rows, std::int64_t in) {
    return projections_.get(device,
                            LinearConfig{rows, in, gates() * options_.hidden_size, options_.bias},
                            kernel_impl());
}

RnnCellKernel& Recurrent::cell(Device& device, std::int64_t n) {
    return cells_.get(device, RnnCellConfig{options_.cell, n, options_.hidden_size}, kernel_impl());
}

Tensor Recurrent::initial_state(const std::vector<Tensor>& xs, std::size_t which, std::int64_t k,
                                Pass& pass) const {
    const std::int64_t n = xs[0].shape()[0], h = options_.hidden_size;
    if (which >= xs.size()) return zeros({n, h}, pass.device);
    Tensor state = Tensor::empty({n, h}, pass.device);
    tensor_ops(pass.device)
        .copy_rows(xs[which], state, RowCopy{n, h, k * h, options_.layers * h, 0, h});
    return state;
}

Tensor Recurrent::merge(const std::vector<Tensor>& xs, Pass& pass) {
    const Shape out = merged_shape(shapes_of(xs));
    if (runs_sequences(pass.device)) return merge_sequence(xs, pass);
    Device& device = pass.device;
    const bool lstm = options_.cell == RnnCellKind::lstm;
    const std::int64_t n = xs[0].shape()[0], steps = xs[0].shape()[1], h = options_.hidden_size;
    const std::int64_t g = gates() * h, rows = steps * n;
    Tensor in = to_time_major(in_layout(xs[0], Layout::contiguous, device), device);
    std::vector<Tensor> saved;  // per layer: input, h sequence, c sequence, gates, h0, c0
    for (std::int64_t k = 0; k < options_.layers; ++k) {
        Weights& w = weights_[static_cast<std::size_t>(k)];
        Tensor projected = Tensor::empty({rows, g}, device);
        projection(device, rows, layer_input(k)).forward(in, w.w_ih.value, w.b_ih.value, projected);
        Tensor hs = Tensor::empty({rows, h}, device),
               gated = Tensor::empty({rows, RnnCellKernel::kSavedGates * h}, device);
        Tensor cs = lstm ? Tensor::empty({rows, h}, device) : Tensor();
        const Tensor h0 = initial_state(xs, 1, k, pass),
                     c0 = lstm ? initial_state(xs, 2, k, pass) : Tensor();
        Tensor h_prev = h0, c_prev = c0;
        Tensor gh = Tensor::empty({n, g}, device);
        LinearKernel& hidden = projection(device, n, h);
        RnnCellKernel& step = cell(device, n);
        for (std::int64_t t = 0; t < steps; ++t) {
            hidden.forward(h_prev, w.w_hh.value, w.b_hh.value, gh);
            Tensor h_t = hs.narrow_batch(t * n, n), s_t = gated.narrow_batch(t * n, n);
            Tensor c_t = lstm ? cs.narrow_batch(t * n, n) : Tensor();
            step.forward(projected.narrow_batch(t * n, n), gh, h_prev, c_prev, h_t, c_t, s_t);
            h_prev = h_t;
            c_prev = c_t;
        }
        if (pass.mode == Mode::train) saved.insert(saved.end(), {in, hs, cs, gated, h0, c0});
        in = hs;
    }
    if (pass.mode == Mode::train) pass.saved.put(this, std::move(saved));
    if (options_.last_only) return in.narrow_batch((steps - 1) * n, n).reshape(out);
    return to_batch_major(in, n, steps, device);
}

std::vector<Tensor> Recurrent::unmerge(const std::vector<Tensor>& xs, const Tensor& dy,
                                       Pass& pass) {
    const Shape out = merged_shape(shapes_of(xs));
    TANDEM_CHECK_AS(ShapeError, dy.shape() == out)
        << label() << ": gradient " << dy.shape().to_string() << " does not match the output "
        << out.to_string();
    // The path its forward took (deterministic mode may have changed since).
    if (pass.saved.contains(this, kSequenceSlot)) return unmerge_sequence(xs, dy, pass);
    const std::vector<Tensor>& saved = pass.saved.get(this);
    TANDEM_CHECK(saved.size() == static_cast<std::size_t>(6 * options_.layers))
        << label() << ": backward after another forward";
    Device& device = pass.device;
    TensorOpsKernel& ops = tensor_ops(device);
    const bool lstm = options_.cell == RnnCellKind::lstm;
    const std::int64_t n = xs[0].shape()[0], steps = xs[0].shape()[1], h = options_.hidden_size;
    const std::int64_t g = gates() * h, rows = steps * n;

    // The gradient of the top layer's h at every step.
    Tensor dhs;
    if (options_.last_only) {
        dhs = zeros({rows, h}, device);
        Tensor last = dhs.narrow_batch((steps - 1) * n, n);
        ops.copy(dy.reshape({n, h}), last);
    } else {
        dhs = to_time_major(dy, device);
    }
    std::vector<Tensor> dh0(static_cast<std::size_t>(options_.layers)), dc0(dh0.size());
    Tensor d_in;
    for (std::int64_t k = options_.layers; k-- > 0;) {
        const Tensor* s = &saved[static_cast<std::size_t>(6 * k)];
        const Tensor &in = s[0], &hs = s[1], &cs = s[2], &gated = s[3], &h0 = s[4], &c0 = s[5];
        Weights& w = weights_[static_cast<std::size_t>(k)];
        LinearKernel& hidden = projection(device, n, h);
        RnnCellKernel& step = cell(device, n);
        Tensor d_projected = Tensor::empty({rows, g}, device);
        // The hidden product's gate gradients of every step, for one weight-gradient product
        // after the loop (28 small ones, one a step, took a fifth of an LSTM's backward at
        // hidden 128). The LSTM's equal its input gates' (d_projected); the GRU's differ.
        Tensor dghs = lstm ? d_projected : Tensor::empty({rows, g}, device);
        Tensor dh_next = zeros({n, h}, device), dh = Tensor::empty({n, h}, device);
        Tensor dh_direct = Tensor::empty({n, h}, device);
        Tensor dc_next = lstm ? zeros({n, h}, device) : Tensor(),
               dc_prev = lstm ? Tensor::empty({n, h}, device) : Tensor();
        for (std::int64_t t = steps; t-- > 0;) {
            const Tensor h_prev = t > 0 ? hs.narrow_batch((t - 1) * n, n) : h0;
            const Tensor c_prev = !lstm ? Tensor() : t > 0 ? cs.narrow_batch((t - 1) * n, n) : c0;
            ops.add(dhs.narrow_batch(t * n, n), dh_next, dh);
            Tensor d_projected_t = d_projected.narrow_batch(t * n, n);
            Tensor dgh = dghs.narrow_batch(t * n, n);
            step.backward(gated.narrow_batch(t * n, n), h_prev, c_prev,
                          lstm ? cs.narrow_batch(t * n, n) : Tensor(), dh, dc_next, d_projected_t,
                          dgh, dh_direct, dc_prev);
            hidden.backward_data(dgh, w.w_hh.value, dh_next);
            ops.accumulate(dh_next, dh_direct);
            std::swap(dc_next, dc_prev);
        }
        // W_hh's gradient: step 0 read h0, step t > 0 the previous step's h.
        hidden.backward_weights(h0, dghs.narrow_batch(0, n), w.w_hh.grad, w.b_hh.grad);
        if (steps > 1)
            projection(device, rows - n, h)
                .backward_weights(hs.narrow_batch(0, rows - n), dghs.narrow_batch(n, rows - n),
                                  w.w_hh.grad, w.b_hh.grad);
        dh0[static_cast<std::size_t>(k)] = dh_next;
        dc0[static_cast<std::size_t>(k)] = dc_next;
        LinearKernel& input = projection(device, rows, layer_input(k));
        input.backward_weights(in, d_projected, w.w_ih.grad, w.b_ih.grad);
        if (k > 0 || pass.need_dx) {
            d_in = Tensor::empty({rows, layer_input(k)}, device);
            input.backward_data(d_projected, w.w_ih.value, d_in);
            dhs = d_in;
        }
    }
    pass.saved.erase(this);

    std::vector<Tensor> dxs{pass.need_dx ? to_batch_major(d_in, n, steps, device) : Tensor()};
    // The initial states' gradients, back in their N x layers x hidden (or N x hidden) shape.
    for (std::size_t i = 1; i < xs.size(); ++i) {
        Tensor d = Tensor::empty(xs[i].shape(), device);
        const auto& per_layer = i == 1 ? dh0 : dc0;
        for (std::int64_t k = 0; k < options_.layers; ++k)
            ops.copy_rows(per_layer[static_cast<std::size_t>(k)], d,
                          RowCopy{n, h, 0, h, k * h, options_.layers * h});
        dxs.push_back(std::move(d));
    }
    return dxs;
}

}  // namespace tandem

#include "layers/additive_attention.h"

#include "base/rng.h"
#include "layers/init.h"

namespace tandem {
namespace {

// N x T x F as the N*T x F rows a Linear kernel takes (contiguous).
Tensor rows_of(const Tensor& x, Device& device) {
    const Shape& s = x.shape();
    return in_layout(x, Layout::contiguous, device).reshape({s[0] * s[1], s[2]});
}

}  // namespace

AdditiveAttention::AdditiveAttention(const AdditiveAttentionOptions& o) : options_(o) {
    TANDEM_CHECK_AS(ConfigError, o.query_size > 0)
        << "AdditiveAttention: query_size must be positive, got " << o.query_size;
    TANDEM_CHECK_AS(ConfigError, o.key_size > 0)
        << "AdditiveAttention: key_size must be positive, got " << o.key_size;
    TANDEM_CHECK_AS(ConfigError, o.hidden_size > 0)
        << "AdditiveAttention: hidden_size must be positive, got " << o.hidden_size;
    query_weight_ = make_parameter("query_weight", {o.hidden_size, o.query_size}, true);
    key_weight_ = make_parameter("key_weight", {o.hidden_size, o.key_size}, true);
    if (o.bias) bias_ = make_parameter("bias", {o.hidden_size}, false);
    score_weight_ = make_parameter("score_weight", {o.hidden_size}, true);
    initialize(0);
}

std::string AdditiveAttention::options_text() const {
    std::string text = "query " + std::to_string(options_.query_size) + ", key " +
                       std::to_string(options_.key_size) + ", hidden " +
                       std::to_string(options_.hidden_size);
    if (!options_.bias) text += ", no bias";
    return text;
}

std::vector<Parameter*> AdditiveAttention::parameters() {
    if (options_.bias) return {&query_weight_, &key_weight_, &bias_, &score_weight_};
    return {&query_weight_, &key_weight_, &score_weight_};
}

void AdditiveAttention::initialize(std::uint64_t seed) {
    const std::int64_t h = options_.hidden_size;
    init_tensor(query_weight_.value, "xavier", options_.query_size, h,
                rng_key(seed, "query_weight"));
    init_tensor(key_weight_.value, "xavier", options_.key_size, h, rng_key(seed, "key_weight"));
    init_tensor(score_weight_.value, "xavier", h, 1, rng_key(seed, "score_weight"));
    if (options_.bias) bias_.value.fill(0.f);
}

Shape AdditiveAttention::merged_shape(const std::vector<Shape>& inputs) const {
    const std::string shapes = check_inputs(inputs);
    TANDEM_CHECK_AS(ShapeError, inputs[0][2] == options_.query_size)
        << label() << ": queries have " << inputs[0][2] << " features, query_weight expects "
        << options_.query_size << shapes;
    TANDEM_CHECK_AS(ShapeError, inputs[1][2] == options_.key_size)
        << label() << ": keys have " << inputs[1][2] << " features, key_weight expects "
        << options_.key_size << shapes;
    return output_of(inputs);
}

MemoryEstimate AdditiveAttention::merged_memory(const std::vector<Shape>& inputs) const {
    MemoryEstimate e = Merge::merged_memory(inputs);
    const std::int64_t n = inputs[0][0], tq = inputs[0][1], tk = inputs[1][1];
    // Both projections and the weights, kept for backward.
    e.saved_bytes +=
        static_cast<std::size_t>(n * ((tq + tk) * options_.hidden_size + tq * tk)) * sizeof(float);
    return e;
}

double AdditiveAttention::merged_flops(const std::vector<Shape>& inputs) const {
    const Shape out = merged_shape(inputs);
    const double n = static_cast<double>(out[0]), tq = static_cast<double>(out[1]);
    const double tk = static_cast<double>(inputs[1][1]),
                 h = static_cast<double>(options_.hidden_size);
    const double projections = 2.0 * n * h * (tq * options_.query_size + tk * options_.key_size);
    // Per score and hidden unit: an add, a tanh (counted as one) and a multiply-add.
    return projections + 4.0 * n * tq * tk * h + 2.0 * n * tq * tk * static_cast<double>(out[2]);
}

LinearKernel& AdditiveAttention::projection(Device& device, std::int64_t rows, std::int64_t in,
                                            bool bias) {
    return projections_.get(device, LinearConfig{rows, in, options_.hidden_size, bias},
                            kernel_impl());
}

Tensor AdditiveAttention::merge(const std::vector<Tensor>& xs, Pass& pass) {
    merged_shape(shapes_of(xs));
    Device& device = pass.device;
    const std::int64_t n = xs[0].shape()[0], tq = xs[0].shape()[1], tk = xs[1].shape()[1],
                       h = options_.hidden_size;
    Tensor query = Tensor::empty({n * tq, h}, device), key = Tensor::empty({n * tk, h}, device);
    projection(device, n * tq, options_.query_size, false)
        .forward(rows_of(xs[0], device), query_weight_.value, Tensor(), query);
    projection(device, n * tk, options_.key_size, options_.bias)
        .forward(rows_of(xs[1], device), key_weight_.value, bias_.value, key);
    Tensor scores = Tensor::empty({n, tq, tk}, device);
    attention_kernel(device).additive_scores(query, key, score_weight_.value, scores,
                                             AdditiveScoreShape{n, tq, tk, h});
    const Tensor weights = softmax_over_keys(scores, device);
    if (pass.mode == Mode::train) pass.saved.put(this, {query, key, weights});
    return weighted_sum(weights, in_layout(values_of(xs), Layout::contiguous, device), device);
}

std::vector<Tensor> AdditiveAttention::unmerge(const std::vector<Tensor>& xs, const Tensor& dy,
                                               Pass& pass) {
    const Shape out = merged_shape(shapes_of(xs));
    TANDEM_CHECK_AS(ShapeError, dy.shape() == out)
        << label() << ": gradient " << dy.shape().to_string() << " does not match the output "
        << out.to_string();
    const std::vector<Tensor> saved = pass.saved.get(this);
    pass.saved.erase(this);
    const Tensor &query = saved.at(0), &key = saved.at(1), &weights = saved.at(2);
    Device& device = pass.device;
    const std::int64_t n = xs[0].shape()[0], tq = xs[0].shape()[1], tk = xs[1].shape()[1],
                       h = options_.hidden_size;
    const Tensor values = in_layout(values_of(xs), Layout::contiguous, device);
    const Tensor g = in_layout(dy, Layout::contiguous, device);
    const Tensor d_scores = scores_gradient(weights, values, g, device);
    Tensor d_query = Tensor::empty({n * tq, h}, device), d_key = Tensor::empty({n * tk, h}, device);
    attention_kernel(device).additive_scores_backward(query, key, score_weight_.value, d_scores,
                                                      d_query, d_key, score_weight_.grad,
                                                      AdditiveScoreShape{n, tq, tk, h});

    const Tensor q_rows = rows_of(xs[0], device), k_rows = rows_of(xs[1], device);
    LinearKernel& queries = projection(device, n * tq, options_.query_size, false);
    Tensor no_bias;
    queries.backward_weights(q_rows, d_query, query_weight_.grad, no_bias);
    Tensor dq = Tensor::empty(q_rows.shape(), device);
    queries.backward_data(d_query, query_weight_.value, dq);
    LinearKernel& keys = projection(device, n * tk, options_.key_size, options_.bias);
    keys.backward_weights(k_rows, d_key, key_weight_.grad, bias_.grad);
    Tensor dk = Tensor::empty(k_rows.shape(), device);
    keys.backward_data(d_key, key_weight_.value, dk);
    dq = dq.reshape(xs[0].shape());
    dk = dk.reshape(xs[1].shape());
    return with_values_gradient(xs, weights, g, dq, dk, device);
}

}  // namespace tandem

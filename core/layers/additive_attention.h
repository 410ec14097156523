// AdditiveAttention: Bahdanau's attention (Bahdanau, Cho, Bengio 2015), batch first:
//   score(n, i, j) = v . tanh(Wq q[n,i] + Wk k[n,j] + b),  a = softmax over j,
//   y[n,i] = sum_j a[n,i,j] value[n,j]
// q N x Tq x query_size, k N x Tk x key_size, value N x Tk x dv (any dv) -> N x Tq x dv.
//
// Inputs (a node of a Graph): (q, k, value), or (q, k) where the keys are the values too (the
// encoder states a decoder attends to). Parameters, as a PyTorch module would name them:
// query_weight (hidden x query_size), key_weight (hidden x key_size), bias (hidden; optional)
// and score_weight (hidden, the vector v); initialised Glorot-uniform ('xavier', suited to
// tanh), bias zero, from the seed and each parameter's name as Linear does. The weights of the
// last forward can be read back (Attention::attention_weights).
//
// How it runs: the two projections are Linear kernels over N*Tq and N*Tk rows; the scores and
// their backward are the attention kernel's (device/attention_math.h), which recompute tanh in
// backward rather than keep N x Tq x Tk x hidden values.
#pragma once

#include "layers/attention.h"

namespace tandem {

struct AdditiveAttentionOptions {
    std::int64_t query_size = 0, key_size = 0, hidden_size = 0;
    bool bias = true;
};

class AdditiveAttention final : public Attention {
public:
    // Throws ConfigError naming a size that is not positive.
    explicit AdditiveAttention(const AdditiveAttentionOptions& options);
    const AdditiveAttentionOptions& options() const { return options_; }

    std::string_view kind() const override { return "AdditiveAttention"; }
    LayerPtr clone() const override {
        return finish_clone(std::make_shared<AdditiveAttention>(options_));
    }
    std::string options_text() const override;

    // Throws ShapeError naming the layer and the shapes when they do not fit the layer.
    Shape merged_shape(const std::vector<Shape>& inputs) const override;
    MemoryEstimate merged_memory(const std::vector<Shape>& inputs) const override;
    double merged_flops(const std::vector<Shape>& inputs) const override;
    Tensor merge(const std::vector<Tensor>& xs, Pass& pass) override;
    std::vector<Tensor> unmerge(const std::vector<Tensor>& xs, const Tensor& dy,
                                Pass& pass) override;

    std::vector<Parameter*> parameters() override;
    void initialize(std::uint64_t seed) override;

private:
    LinearKernel& projection(Device& device, std::int64_t rows, std::int64_t in, bool bias);

    AdditiveAttentionOptions options_;
    Parameter query_weight_, key_weight_, bias_, score_weight_;
    KernelCache<LinearKernel> projections_;
};

}  // namespace tandem

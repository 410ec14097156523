// ScaledDotProductAttention: y = softmax(q k^T * scale) v, PyTorch's
// torch.nn.functional.scaled_dot_product_attention (without dropout), batch first:
// q N x Tq x d, k N x Tk x d, v N x Tk x dv -> N x Tq x dv.
//
// Inputs (a node of a Graph): (q, k, v), or (q, kv) where the second input is both the keys and
// the values (attention over an encoder's states: the common case, without a copy node).
// `scale` is 1/sqrt(d) unless given; `causal` hides from query i the keys j > i (PyTorch's
// is_causal, aligned at the top left when Tq != Tk). No parameters: the projections of
// multi-head attention are Linear layers around it in a graph. The weights of the last forward
// can be read back (Attention::attention_weights).
#pragma once

#include <optional>

#include "layers/attention.h"

namespace tandem {

struct ScaledDotProductAttentionOptions {
    std::optional<float> scale;  // 1/sqrt(d) when absent
    bool causal = false;
};

class ScaledDotProductAttention final : public Attention {
public:
    // Throws ConfigError when scale is given and not a positive finite number.
    explicit ScaledDotProductAttention(const ScaledDotProductAttentionOptions& options = {});
    const ScaledDotProductAttentionOptions& options() const { return options_; }

    std::string_view kind() const override { return "ScaledDotProductAttention"; }
    LayerPtr clone() const override {
        return finish_clone(std::make_shared<ScaledDotProductAttention>(options_));
    }
    std::string options_text() const override;

    // Throws ShapeError naming the layer and the shapes when they do not fit together.
    Shape merged_shape(const std::vector<Shape>& inputs) const override;
    MemoryEstimate merged_memory(const std::vector<Shape>& inputs) const override;
    double merged_flops(const std::vector<Shape>& inputs) const override;
    Tensor merge(const std::vector<Tensor>& xs, Pass& pass) override;
    std::vector<Tensor> unmerge(const std::vector<Tensor>& xs, const Tensor& dy,
                                Pass& pass) override;

private:
    float scale_for(std::int64_t d) const;

    ScaledDotProductAttentionOptions options_;
};

}  // namespace tandem

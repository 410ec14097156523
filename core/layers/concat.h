// Concat: joins its inputs along one dimension (channels of images, features of vectors), the
// join of an Inception block or of a model's branches. A node of a Graph (merge.h).
//
// Inputs have one rank and equal sizes but along `dim`; the output's size there is the sum.
// Backward hands each input its slice of dy. `dim` counts from 0 here and is never the batch
// (0); messages count from 1 as the Lua API does (nn.Concat(2) joins channels or features).
#pragma once

#include "layers/merge.h"

namespace tandem {

class Concat final : public Merge {
public:
    // Throws ConfigError when dim is below 1.
    explicit Concat(int dim);
    std::string_view kind() const override { return "Concat"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<Concat>(dim_)); }
    int dim() const { return dim_; }
    std::string options_text() const override;

    Shape merged_shape(const std::vector<Shape>& inputs) const override;
    Tensor merge(const std::vector<Tensor>& xs, Pass& pass) override;
    std::vector<Tensor> unmerge(const std::vector<Tensor>& xs, const Tensor& dy,
                                Pass& pass) override;

private:
    int dim_;
};

}  // namespace tandem

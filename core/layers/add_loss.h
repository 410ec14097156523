// AddLoss: a further term of the objective, added where a graph computes it: several losses
// with weights in one step (an autoencoder's reconstruction beside a classifier's prediction).
//
// A node of a Graph (merge.h) with three inputs (x, output, target). It passes x through
// unchanged and adds weight x loss(output, target) to what training minimises: its backward
// hands x its gradient as it came and gives `output` the term's gradient, scaled as the engine
// scales its loss (Pass::loss_scale: the mean over the global batch). The target is taken as
// a constant (no gradient flows into it), as a detached tensor in PyTorch. Route x on to the
// net's output (the head reads it), so that the term's gradient is part of the step: a node
// whose output reaches no loss gets no backward.
//
// The loss compares values (MSE, BCEWithLogits); its term, weight x the loss summed over the
// samples, goes to Pass::added_loss (the engine reports it in the step's loss and apart).
// A recomputing forward does not add it again.
#pragma once

#include <memory>

#include "layers/loss.h"
#include "layers/merge.h"

namespace tandem {

class AddLoss final : public Merge {
public:
    // ConfigError for a loss of class labels or a weight that is negative or not finite.
    AddLoss(std::shared_ptr<Loss> loss, float weight);
    std::string_view kind() const override { return "AddLoss"; }
    LayerPtr clone() const override {
        return finish_clone(std::make_shared<AddLoss>(loss_->clone(), weight_));
    }
    std::string options_text() const override;
    std::size_t min_inputs() const override { return 3; }
    std::size_t max_inputs() const override { return 3; }
    const Loss& loss() const { return *loss_; }
    float weight() const { return weight_; }

    Shape merged_shape(const std::vector<Shape>& inputs) const override;
    Tensor merge(const std::vector<Tensor>& xs, Pass& pass) override;
    std::vector<Tensor> unmerge(const std::vector<Tensor>& xs, const Tensor& dy,
                                Pass& pass) override;

private:
    std::shared_ptr<Loss> loss_;  // its own: what it keeps for backward is keyed by it
    float weight_;
};

}  // namespace tandem

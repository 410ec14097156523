#include "layers/add_loss.h"

#include <cmath>
#include <sstream>

namespace tandem {

AddLoss::AddLoss(std::shared_ptr<Loss> loss, float weight)
    : loss_(std::move(loss)), weight_(weight) {
    TANDEM_CHECK_AS(ConfigError, loss_ != nullptr) << "AddLoss needs a loss";
    TANDEM_CHECK_AS(ConfigError, loss_->targets() == Loss::Targets::values)
        << "AddLoss: " << loss_->description()
        << " compares outputs with class labels, which a graph does not hold; give a loss of "
           "values (MSE, "
           "BCEWithLogits)";
    TANDEM_CHECK_AS(ConfigError, std::isfinite(weight) && weight >= 0)
        << "AddLoss: the weight must be a finite number at least 0, got " << weight;
}

std::string AddLoss::options_text() const {
    std::ostringstream out;
    out << loss_->description() << ", weight " << weight_;
    return out.str();
}

Shape AddLoss::merged_shape(const std::vector<Shape>& inputs) const {
    check_input_count(inputs.size());
    TANDEM_CHECK_AS(ShapeError, inputs[1] == inputs[2])
        << label() << ": the output (input 2) is " << inputs[1].to_string()
        << " and the target (input 3) is " << inputs[2].to_string() << "; " << loss_->kind()
        << " compares them element by element";
    TANDEM_CHECK_AS(ShapeError, inputs[0][0] == inputs[1][0])
        << label() << ": input 1 holds " << inputs[0][0] << " samples and the output "
        << inputs[1][0];
    return inputs[0];
}

Tensor AddLoss::merge(const std::vector<Tensor>& xs, Pass& pass) {
    (void)merged_shape(shapes_of(xs));
    const LossSums sums = loss_->forward(xs[1], xs[2], pass);
    if (pass.added_loss != nullptr && !pass.recomputing) *pass.added_loss += weight_ * sums.loss;
    return xs[0];
}

std::vector<Tensor> AddLoss::unmerge(const std::vector<Tensor>& xs, const Tensor& dy, Pass& pass) {
    // The engine's scale (1 / the global batch); alone, the mean over this batch.
    const float scale =
        pass.loss_scale > 0 ? pass.loss_scale : 1.0f / static_cast<float>(xs[1].shape()[0]);
    Tensor d_output = loss_->backward(xs[1], xs[2], weight_ * scale, pass);
    return {dy, std::move(d_output), Tensor()};
}

}  // namespace tandem

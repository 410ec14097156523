// Narrow: indices [start, start + length) of one dimension (Torch's nn.Narrow, PyTorch's
// narrow): how a graph splits a vector of features, or a block of channels, into parts.
//
// `dim` and `start` count from 0 here; messages count from 1, as the Lua API does. The batch
// (dimension 0) cannot be narrowed: micro-batches cut along it. Backward scatters dy into a
// zero gradient of x's shape.
#pragma once

#include "layers/layer.h"

namespace tandem {

class Narrow final : public Layer {
public:
    // Throws ConfigError when dim < 1, start < 0 or length < 1.
    Narrow(int dim, std::int64_t start, std::int64_t length);
    std::string_view kind() const override { return "Narrow"; }
    LayerPtr clone() const override {
        return finish_clone(std::make_shared<Narrow>(dim_, start_, length_));
    }
    std::string options_text() const override;

    // Throws ShapeError naming the layer when the range does not fit the input.
    Shape output_shape(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;

private:
    int dim_;
    std::int64_t start_, length_;
};

}  // namespace tandem

// Flatten: N x C x H x W (any rank >= 2) to N x (C * H * W), in PyTorch's element order.
//
// A contiguous input is reshaped (a view, no copy). A channels_last input is first copied to
// the contiguous layout so that the flattened order is C, H, W as in PyTorch, whatever the
// layout upstream; backward reshapes dy and returns it in x's layout. No kernel of its own:
// the layout copy is the device's tensor_ops copy.
#pragma once

#include "layers/layer.h"

namespace tandem {

class Flatten final : public Layer {
public:
    std::string_view kind() const override { return "Flatten"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<Flatten>()); }
    // Throws ShapeError naming the layer and the input when the rank is below 2.
    Shape output_shape(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;
};

}  // namespace tandem

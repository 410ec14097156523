// Reshape: each sample to another shape with the same number of elements (N x 784 to
// N x 28 x 28, the rows of an image as a sequence), in row-major (NCHW) element order.
//
// `sample_shape` excludes the batch; one entry may be -1, worked out from the others. A
// channels_last input is copied to the contiguous layout first (as Flatten does), and the
// output is contiguous; backward returns dx in x's layout.
#pragma once

#include "layers/layer.h"

namespace tandem {

class Reshape final : public Layer {
public:
    // Throws ConfigError for an empty shape, a size below 1 other than one -1.
    explicit Reshape(std::vector<std::int64_t> sample_shape);
    std::string_view kind() const override { return "Reshape"; }
    LayerPtr clone() const override {
        return finish_clone(std::make_shared<Reshape>(sample_shape_));
    }
    std::string options_text() const override;

    // Throws ShapeError naming the layer when the element counts differ.
    Shape output_shape(const Shape& input) const override;
    Tensor forward(const Tensor& x, Pass& pass) override;
    Tensor backward(const Tensor& x, const Tensor& dy, Pass& pass) override;

private:
    std::vector<std::int64_t> sample_shape_;
};

}  // namespace tandem

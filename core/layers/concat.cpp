#include "layers/concat.h"

#include "layers/slice.h"

namespace tandem {

Concat::Concat(int dim) : dim_(dim) {
    TANDEM_CHECK_AS(ConfigError, dim >= 1)
        << "Concat: dimension " << dim + 1 << " cannot be joined (dimension 1 is the batch; "
        << "2 is channels or features)";
}

std::string Concat::options_text() const {
    return "dimension " + std::to_string(dim_ + 1);
}

Shape Concat::merged_shape(const std::vector<Shape>& inputs) const {
    check_input_count(inputs.size());
    const Shape& first = inputs.front();
    TANDEM_CHECK_AS(ShapeError, dim_ < first.rank())
        << label() << ": input 1 is " << first.to_string() << ", which has no dimension "
        << dim_ + 1;
    Shape out = first;
    for (std::size_t i = 1; i < inputs.size(); ++i) {
        const Shape& s = inputs[i];
        bool fits = s.rank() == first.rank();
        for (int d = 0; fits && d < s.rank(); ++d) fits = d == dim_ || s[d] == first[d];
        TANDEM_CHECK_AS(ShapeError, fits)
            << label() << ": input " << i + 1 << " is " << s.to_string() << " and input 1 is "
            << first.to_string() << "; joined along dimension " << dim_ + 1
            << ", they must have the same rank and agree in every other dimension";
        out[dim_] += s[dim_];
    }
    return out;
}

Tensor Concat::merge(const std::vector<Tensor>& xs, Pass& pass) {
    const Shape shape = merged_shape(shapes_of(xs));
    const auto same = in_first_layout(xs, pass.device);
    Tensor y = Tensor::empty(shape, pass.device, DType::f32, same.front().layout());
    std::int64_t start = 0;
    for (const Tensor& x : same) {
        copy_slice_in(x, y, dim_, start, pass.device);
        start += x.shape()[dim_];
    }
    return y;
}

std::vector<Tensor> Concat::unmerge(const std::vector<Tensor>& xs, const Tensor& dy, Pass& pass) {
    std::vector<Tensor> dxs;
    std::int64_t start = 0;
    for (const Tensor& x : xs) {
        Tensor dx = Tensor::empty(x.shape(), pass.device, DType::f32, dy.layout());
        copy_slice_out(dy, dim_, start, dx, pass.device);
        start += x.shape()[dim_];
        dxs.push_back(std::move(dx));
    }
    return dxs;
}

}  // namespace tandem

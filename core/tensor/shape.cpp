#include "tensor/shape.h"

#include "base/error.h"

namespace tandem {

std::int64_t Shape::numel() const {
    std::int64_t n = 1;
    for (auto d : dims_) n *= d;
    return n;
}

Shape Shape::with_batch(std::int64_t n) const {
    TANDEM_CHECK_AS(ShapeError, rank() > 0) << "a scalar shape has no batch dimension";
    Shape s = *this;
    s.dims_[0] = n;
    return s;
}

std::int64_t Shape::sample_numel() const {
    TANDEM_CHECK_AS(ShapeError, rank() > 0 && dims_[0] > 0)
        << "shape " << to_string() << " has no samples";
    return numel() / dims_[0];
}

std::string Shape::to_string() const {
    if (dims_.empty()) return "scalar";
    std::string text;
    for (std::size_t i = 0; i < dims_.size(); ++i) {
        if (i) text += 'x';
        text += std::to_string(dims_[i]);
    }
    return text;
}

}  // namespace tandem

// What every tensor-math function checks first (tensor_math.h): the operands' dtype, device
// and layout, and dimensions. Internal to core/tensor/tensor_math*.cpp.
#pragma once

#include <cstdint>
#include <string_view>

#include "tensor/tensor.h"

namespace tandem::math_detail {

// `x`, checked (defined, f32, in host-readable memory) and in the contiguous layout: the
// tensor itself, or a contiguous copy of a channels_last one. `function` and `arg` name it in
// the error ("sum: argument 'x' ...").
Tensor host_input(const Tensor& x, std::string_view function, std::string_view arg);

// Both operands on one device (the result goes there).
void check_same_device(const Tensor& a, const Tensor& b, std::string_view function);

// `dim` is a dimension of `x` (0-based): ShapeError naming the function otherwise.
void check_dim(const Tensor& x, int dim, std::string_view function, std::string_view arg);

// A shape seen around one dimension: outer x size x inner, row-major.
struct Around {
    std::int64_t outer = 1;
    std::int64_t size = 1;
    std::int64_t inner = 1;
};
Around around(const Shape& shape, int dim);

// A new contiguous f32 tensor of `shape` on `like`'s device.
Tensor result_like(const Tensor& like, const Shape& shape);

}  // namespace tandem::math_detail

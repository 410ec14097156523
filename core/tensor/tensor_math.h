// Tensor math on host-readable f32 tensors (issue 18, "Torch-grade Lua"): what a recipe or a
// layer written in Lua computes with, outside the layers' device kernels.
//
// Every function takes tensors on one host-readable device (the host, or a CPU device) and
// returns a new contiguous tensor on that device; a channels_last input is read in its logical
// (NCHW) order, so results never depend on the layout. Dimensions and indices count from 0
// here (the Lua binding maps Lua's 1-based ones). A wrong input throws: ShapeError for shapes
// and dimensions, Error for a dtype or device, each naming the function, the argument and the
// tensors. Loops are plain and single-threaded: this is glue math beside the oneDNN kernels.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "tensor/tensor.h"

namespace tandem {

enum class BinaryOp { add, sub, mul, div };
enum class UnaryOp { exp, log, tanh, sigmoid, abs, sqrt, neg };
std::string_view op_name(BinaryOp op);  // "add", ...
std::string_view op_name(UnaryOp op);   // "exp", ...

// The shape two operands broadcast to, PyTorch's rule: dimensions are matched from the last
// one; each pair must be equal or one of them 1; the shorter shape is padded with 1s in front.
// ShapeError naming `function` and both shapes otherwise.
Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view function);

// Element-wise a op b, broadcasting; a number on either side.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor binary(BinaryOp op, const Tensor& a, float b);
Tensor binary(BinaryOp op, float a, const Tensor& b);
Tensor unary(UnaryOp op, const Tensor& x);
Tensor pow(const Tensor& x, float exponent);

// Matrix product: (n x k) @ (k x m); (b x n x k) @ (b x k x m), batch by batch; and
// (b x n x k) @ (k x m), the same matrix for every batch entry.
Tensor matmul(const Tensor& a, const Tensor& b);

// Sums and means along `dim` (the dimension is dropped, or kept with size 1), accumulated in
// double. The whole-tensor forms return a number (the mean of no elements is NaN).
Tensor sum(const Tensor& x, int dim, bool keepdim = false);
Tensor mean(const Tensor& x, int dim, bool keepdim = false);
double sum_all(const Tensor& x);
double mean_all(const Tensor& x);

// The largest value along `dim` and its position (an i32 tensor, 0-based; the first one on a
// tie; NaN counts as largest, as in PyTorch). An empty `dim` is a ShapeError.
struct MaxResult {
    Tensor values;
    Tensor indices;
};
MaxResult max(const Tensor& x, int dim, bool keepdim = false);
// The whole tensor's largest value and its flat (row-major) index.
std::pair<float, std::int64_t> max_all(const Tensor& x);

// Copies: dimensions dim0 and dim1 swapped; elements [start, start + length) along `dim`;
// the tensors joined along `dim` (equal in every other dimension).
Tensor transpose(const Tensor& x, int dim0, int dim1);
Tensor narrow(const Tensor& x, int dim, std::int64_t start, std::int64_t length);
Tensor cat(std::span<const Tensor> xs, int dim);

}  // namespace tandem

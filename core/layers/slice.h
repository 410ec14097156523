// Moving a slice along one dimension between two tensors of the same layout: what Concat
// (pieces into the whole) and Narrow (a piece out of the whole) do, on any device.
//
// In either layout a dimension's elements lie as `outer` runs of `size * inner` contiguous
// elements (`inner` being the dimension's stride), so a slice [start, start + length) is
// `outer` runs of `length * inner` elements: one strided block copy (TensorOps::copy_rows).
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace tandem {

class Device;

struct DimensionSpan {
    std::int64_t outer = 1;  // runs
    std::int64_t size = 1;   // the dimension's extent
    std::int64_t inner = 1;  // elements per index of the dimension within a run
};
// Throws when `dim` is not a dimension of `shape`.
DimensionSpan dimension_span(const Shape& shape, Layout layout, int dim);

// part = whole's indices [start, start + part.shape()[dim]) along `dim`.
void copy_slice_out(const Tensor& whole, int dim, std::int64_t start, Tensor& part, Device& device);
// whole's indices [start, start + part.shape()[dim]) along `dim` = part.
void copy_slice_in(const Tensor& part, Tensor& whole, int dim, std::int64_t start, Device& device);

}  // namespace tandem

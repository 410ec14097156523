#include "layers/slice.h"

#include "kernels/kernel_cache.h"

namespace tandem {
namespace {

// The copy between `whole` and `part` (same layout, same shape but along `dim`) of part's
// extent at `start`: offsets and pitches as seen from the whole (w) and the part (p).
RowCopy slice_rows(const Tensor& whole, const Tensor& part, int dim, std::int64_t start) {
    TANDEM_CHECK(whole.layout() == part.layout() && whole.dtype() == part.dtype() &&
                 whole.shape().rank() == part.shape().rank())
        << "slice copy between " << whole.description() << " and " << part.description();
    const DimensionSpan w = dimension_span(whole.shape(), whole.layout(), dim);
    const DimensionSpan p = dimension_span(part.shape(), part.layout(), dim);
    TANDEM_CHECK(w.outer == p.outer && w.inner == p.inner && start >= 0 && start + p.size <= w.size)
        << "slice [" << start << ", " << start + p.size << ") of dimension " << dim << " between "
        << whole.description() << " and " << part.description();
    RowCopy c;
    c.rows = w.outer;
    c.width = p.size * p.inner;
    c.src_offset = start * w.inner;  // as read out of the whole
    c.src_pitch = w.size * w.inner;
    c.dst_offset = 0;
    c.dst_pitch = c.width;
    return c;
}

}  // namespace

DimensionSpan dimension_span(const Shape& shape, Layout layout, int dim) {
    TANDEM_CHECK(dim >= 0 && dim < shape.rank())
        << "dimension " << dim << " of " << shape.to_string();
    const auto strides = layout_strides(shape, layout);
    DimensionSpan s;
    s.size = shape[dim];
    s.inner = strides[static_cast<std::size_t>(dim)];
    const std::int64_t run = s.size * s.inner;
    s.outer = run == 0 ? 0 : shape.numel() / run;
    return s;
}

void copy_slice_out(const Tensor& whole, int dim, std::int64_t start, Tensor& part,
                    Device& device) {
    tensor_ops(device).copy_rows(whole, part, slice_rows(whole, part, dim, start));
}

void copy_slice_in(const Tensor& part, Tensor& whole, int dim, std::int64_t start, Device& device) {
    RowCopy c = slice_rows(whole, part, dim, start);
    std::swap(c.src_offset, c.dst_offset);
    std::swap(c.src_pitch, c.dst_pitch);
    tensor_ops(device).copy_rows(part, whole, c);
}

}  // namespace tandem

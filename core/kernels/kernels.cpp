#include "kernels/kernels.h"

#include "base/error.h"

namespace tandem {
namespace {

std::int64_t pooled_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                         std::int64_t pad, bool ceil_mode) {
    std::int64_t out = (in + 2 * pad - kernel + (ceil_mode ? stride - 1 : 0)) / stride + 1;
    // PyTorch's rule: the last window must start inside the input or the left padding.
    if (ceil_mode && (out - 1) * stride >= in + pad) --out;
    return out;
}

}  // namespace

std::int64_t Pool2dConfig::out_h() const {
    return pooled_size(h, kernel_h, stride_h, pad_h, ceil_mode);
}

std::int64_t Pool2dConfig::out_w() const {
    return pooled_size(w, kernel_w, stride_w, pad_w, ceil_mode);
}

void check_row_copy(const Tensor& src, const Tensor& dst, const RowCopy& c) {
    TANDEM_CHECK(src.dtype() == dst.dtype())
        << "copy_rows: " << src.description() << " into " << dst.description();
    auto within = [&](const Tensor& t, std::int64_t offset, std::int64_t pitch) {
        if (c.rows == 0 || c.width == 0) return true;
        return c.width >= 0 && c.rows > 0 && offset >= 0 && pitch >= 0 &&
               offset + (c.rows - 1) * pitch + c.width <= t.numel();
    };
    TANDEM_CHECK(within(src, c.src_offset, c.src_pitch) && within(dst, c.dst_offset, c.dst_pitch))
        << "copy_rows: " << c.rows << " rows of " << c.width << " outside " << src.description()
        << " or " << dst.description();
}

}  // namespace tandem

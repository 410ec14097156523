#include "tensor/tensor.h"

#include <cstring>

#include "device/device.h"

namespace tandem {

std::string_view layout_name(Layout layout) {
    return layout == Layout::channels_last ? "channels_last" : "contiguous";
}

Layout parse_layout(std::string_view name) {
    if (name == "contiguous") return Layout::contiguous;
    if (name == "channels_last") return Layout::channels_last;
    TANDEM_THROW(ConfigError) << "layout must be 'contiguous' or 'channels_last', got '" << name
                              << "'";
}
namespace {

// Calls f(logical_index, storage_index) for every element of a rank-4 channels_last tensor.
template <class F>
void for_each_nhwc(const Shape& s, F f) {
    const std::int64_t n = s[0], c = s[1], h = s[2], w = s[3];
    std::int64_t logical = 0;
    for (std::int64_t in = 0; in < n; ++in)
        for (std::int64_t ic = 0; ic < c; ++ic)
            for (std::int64_t ih = 0; ih < h; ++ih)
                for (std::int64_t iw = 0; iw < w; ++iw, ++logical)
                    f(logical, ((in * h + ih) * w + iw) * c + ic);
}

// Permutes host bytes of elements of `size` bytes between logical and stored order.
void permute_host(const Shape& s, Layout layout, std::size_t size, const char* from, char* to,
                  bool to_storage) {
    if (layout == Layout::contiguous) {
        std::memcpy(to, from, static_cast<std::size_t>(s.numel()) * size);
        return;
    }
    for_each_nhwc(s, [&](std::int64_t logical, std::int64_t stored) {
        if (to_storage)
            std::memcpy(to + stored * size, from + logical * size, size);
        else
            std::memcpy(to + logical * size, from + stored * size, size);
    });
}

}  // namespace

std::vector<std::int64_t> layout_strides(const Shape& shape, Layout layout) {
    std::vector<std::int64_t> strides(static_cast<std::size_t>(shape.rank()));
    if (layout == Layout::channels_last) {
        TANDEM_CHECK_AS(ShapeError, shape.rank() == 4)
            << "channels_last needs a rank-4 shape, got " << shape.to_string();
        const std::int64_t c = shape[1], h = shape[2], w = shape[3];
        strides = {h * w * c, 1, w * c, c};
        return strides;
    }
    std::int64_t stride = 1;
    for (int i = shape.rank() - 1; i >= 0; --i) {
        strides[static_cast<std::size_t>(i)] = stride;
        stride *= shape[i];
    }
    return strides;
}

Tensor Tensor::empty(const Shape& shape, Device& device, DType dtype, Layout layout) {
    for (auto d : shape.dims())
        TANDEM_CHECK_AS(ShapeError, d >= 0)
            << "a tensor dimension cannot be negative (shape " << shape.to_string() << ")";
    if (layout == Layout::channels_last)
        TANDEM_CHECK_AS(ShapeError, shape.rank() == 4)
            << "channels_last needs a rank-4 shape, got " << shape.to_string();
    Tensor t;
    t.shape_ = shape;
    t.dtype_ = dtype;
    t.layout_ = layout;
    t.storage_ = std::make_shared<Storage>(device, t.nbytes());
    return t;
}

Tensor Tensor::zeros(const Shape& shape, Device& device, DType dtype, Layout layout) {
    Tensor t = empty(shape, device, dtype, layout);
    if (device.host_accessible()) {
        std::memset(t.raw(), 0, t.nbytes());
    } else {
        std::vector<char> zeros(t.nbytes(), 0);
        device.copy_from_host(t.raw(), zeros.data(), zeros.size());
    }
    return t;
}

Tensor Tensor::from_vector(const Shape& shape, Device& device, std::span<const float> values,
                           Layout layout) {
    Tensor t = empty(shape, device, DType::f32, layout);
    t.copy_from(values);
    return t;
}

Device& Tensor::device() const {
    TANDEM_CHECK(defined()) << "an undefined tensor has no device";
    return storage_->device();
}

std::vector<std::int64_t> Tensor::strides() const {
    return layout_strides(shape_, layout_);
}

void* Tensor::raw() const {
    TANDEM_CHECK(defined()) << "use of an undefined tensor";
    return static_cast<char*>(storage_->data()) + offset_bytes_;
}

void Tensor::check_host_access(DType wanted) const {
    TANDEM_CHECK(defined()) << "use of an undefined tensor";
    TANDEM_CHECK(dtype_ == wanted)
        << description() << " holds " << dtype_name(dtype_) << ", read as " << dtype_name(wanted);
    TANDEM_CHECK(device().host_accessible()) << description() << " is not in host-readable memory";
}

Tensor Tensor::reshape(const Shape& shape) const {
    TANDEM_CHECK_AS(ShapeError, shape.numel() == numel())
        << "cannot reshape " << description() << " to " << shape.to_string() << " (" << numel()
        << " elements, " << shape.numel() << " wanted)";
    TANDEM_CHECK_AS(ShapeError, layout_ == Layout::contiguous)
        << "cannot reshape " << description() << ": channels_last; convert it to contiguous first";
    Tensor t = *this;
    t.shape_ = shape;
    return t;
}

Tensor Tensor::narrow_batch(std::int64_t begin, std::int64_t count) const {
    TANDEM_CHECK_AS(ShapeError,
                    shape_.rank() >= 1 && begin >= 0 && count >= 0 && begin + count <= shape_[0])
        << "cannot take samples [" << begin << ", " << begin + count << ") of " << description();
    Tensor t = *this;
    t.shape_[0] = count;
    const std::int64_t per_sample = shape_[0] == 0 ? 0 : numel() / shape_[0];
    t.offset_bytes_ += static_cast<std::size_t>(begin * per_sample) * dtype_size(dtype_);
    return t;
}

Tensor Tensor::to_layout(Layout layout) const {
    if (layout == layout_) return *this;
    Tensor t = empty(shape_, device(), dtype_, layout);
    t.copy_from(*this);
    return t;
}

Tensor Tensor::to(Device& target) const {
    Tensor t = empty(shape_, target, dtype_, layout_);
    // One copy when either side is host memory (between CPU devices: a plain memcpy).
    if (device().host_accessible()) {
        target.copy_from_host(t.raw(), raw(), nbytes());
        return t;
    }
    if (target.host_accessible()) {
        device().copy_to_host(t.raw(), raw(), nbytes());
        return t;
    }
    std::vector<char> host(nbytes());
    device().copy_to_host(host.data(), raw(), host.size());
    target.copy_from_host(t.raw(), host.data(), host.size());
    return t;
}

Tensor Tensor::clone() const {
    return to(device());
}

std::vector<float> Tensor::to_vector() const {
    TANDEM_CHECK(dtype_ == DType::f32) << description() << " is not float32";
    std::vector<char> stored(nbytes());
    device().copy_to_host(stored.data(), raw(), stored.size());
    std::vector<float> values(static_cast<std::size_t>(numel()));
    permute_host(shape_, layout_, sizeof(float), stored.data(),
                 reinterpret_cast<char*>(values.data()), false);
    return values;
}

void Tensor::copy_from(std::span<const float> values) {
    TANDEM_CHECK(dtype_ == DType::f32) << description() << " is not float32";
    TANDEM_CHECK_AS(ShapeError, static_cast<std::int64_t>(values.size()) == numel())
        << description() << " has " << numel() << " elements, given " << values.size();
    std::vector<char> stored(nbytes());
    permute_host(shape_, layout_, sizeof(float), reinterpret_cast<const char*>(values.data()),
                 stored.data(), true);
    device().copy_from_host(raw(), stored.data(), stored.size());
}

void Tensor::copy_from(const Tensor& other) {
    TANDEM_CHECK_AS(ShapeError, other.shape_ == shape_ && other.dtype_ == dtype_)
        << "cannot copy " << other.description() << " into " << description();
    const std::size_t size = dtype_size(dtype_);
    std::vector<char> stored(nbytes()), logical(nbytes());
    other.device().copy_to_host(stored.data(), other.raw(), stored.size());
    permute_host(shape_, other.layout_, size, stored.data(), logical.data(), false);
    permute_host(shape_, layout_, size, logical.data(), stored.data(), true);
    device().copy_from_host(raw(), stored.data(), stored.size());
}

void Tensor::fill(float value) {
    std::vector<float> values(static_cast<std::size_t>(numel()), value);
    copy_from(values);
}

std::string Tensor::description() const {
    if (!defined()) return "Tensor(undefined)";
    std::string text = "Tensor(" + shape_.to_string() + ", ";
    text += dtype_ == DType::f32 ? "f32" : dtype_ == DType::i32 ? "i32" : "u8";
    if (layout_ == Layout::channels_last) text += ", channels_last";
    return text + ", " + device().name() + ")";
}

}  // namespace tandem

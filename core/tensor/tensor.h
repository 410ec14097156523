// Tensor: a shape, an element type, a memory layout and shared storage on one device.
//
// Images are N x C x H x W in every API (shape order never changes). The layout says how the
// elements lie in memory: `contiguous` is row-major over the shape (NCHW); `channels_last` is
// NHWC, which oneDNN's convolutions, batch norm and pooling read without reordering. Layers
// produce their output in the layout of their input, so a net keeps one layout throughout.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "tensor/dtype.h"
#include "tensor/shape.h"
#include "tensor/storage.h"

namespace tandem {

class Device;

enum class Layout { contiguous, channels_last };
// "contiguous" or "channels_last": the names every option and message uses.
std::string_view layout_name(Layout layout);
// The layout called `name`; ConfigError naming it and the two known otherwise.
Layout parse_layout(std::string_view name);

class Tensor {
public:
    Tensor() = default;

    // Uninitialised memory from the device's allocator (throws DeviceMemoryError past its cap).
    static Tensor empty(const Shape& shape, Device& device, DType dtype = DType::f32,
                        Layout layout = Layout::contiguous);
    static Tensor zeros(const Shape& shape, Device& device, DType dtype = DType::f32,
                        Layout layout = Layout::contiguous);
    // A tensor of `shape` on `device` holding `values` in logical (row-major) order.
    static Tensor from_vector(const Shape& shape, Device& device, std::span<const float> values,
                              Layout layout = Layout::contiguous);

    bool defined() const { return storage_ != nullptr; }
    const Shape& shape() const { return shape_; }
    DType dtype() const { return dtype_; }
    Layout layout() const { return layout_; }
    Device& device() const;
    std::int64_t numel() const { return shape_.numel(); }
    std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }

    // Element strides in the order of the shape's dimensions.
    std::vector<std::int64_t> strides() const;

    // Typed pointer to the first element; checks the type and that the host can read it.
    template <class T>
    T* data() const {
        check_host_access(dtype_of<T>());
        return static_cast<T*>(raw());
    }
    void* raw() const;

    // A view with another shape over the same elements; needs the contiguous layout.
    Tensor reshape(const Shape& shape) const;
    // A view of samples [begin, begin + count) along the first dimension, sharing storage: how
    // a batch is cut into micro-batches without copying (the batch dimension is outermost in
    // both layouts).
    Tensor narrow_batch(std::int64_t begin, std::int64_t count) const;
    // The same values in another layout (a copy; `*this` when already in it).
    Tensor to_layout(Layout layout) const;
    // A copy on `device`, same layout.
    Tensor to(Device& device) const;
    Tensor clone() const;

    // The values in logical (row-major) order, copied to the host.
    std::vector<float> to_vector() const;
    // Overwrites every element from `values`, given in logical order.
    void copy_from(std::span<const float> values);
    // Copies another tensor's values (same shape and dtype; layouts may differ).
    void copy_from(const Tensor& other);
    void fill(float value);

    // "Tensor(8x3x32x32, f32, cpu:1)".
    std::string description() const;

private:
    void check_host_access(DType wanted) const;

    std::shared_ptr<Storage> storage_;
    Shape shape_;
    DType dtype_ = DType::f32;
    Layout layout_ = Layout::contiguous;
    std::size_t offset_bytes_ = 0;
};

// Strides of `shape` laid out as `layout` (channels_last only for rank 4).
std::vector<std::int64_t> layout_strides(const Shape& shape, Layout layout);

}  // namespace tandem

// Shape: the extent of each dimension of a tensor, outermost first (N, C, H, W for images).
#pragma once

#include <compare>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace tandem {

class Shape {
public:
    Shape() = default;
    Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
    explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

    int rank() const { return static_cast<int>(dims_.size()); }
    std::int64_t operator[](int i) const { return dims_.at(static_cast<std::size_t>(i)); }
    std::int64_t& operator[](int i) { return dims_.at(static_cast<std::size_t>(i)); }
    const std::vector<std::int64_t>& dims() const { return dims_; }

    // Product of all dimensions (1 for rank 0).
    std::int64_t numel() const;
    // The same shape with the first (batch) dimension replaced.
    Shape with_batch(std::int64_t n) const;
    // Elements per sample: numel() / dims[0].
    std::int64_t sample_numel() const;

    // "8x3x32x32"; "scalar" for rank 0.
    std::string to_string() const;

    auto operator<=>(const Shape&) const = default;

private:
    std::vector<std::int64_t> dims_;
};

}  // namespace tandem

// Reductions: sums, means and maxima along a dimension or over the whole tensor (tensor_math.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "tensor/tensor_math.h"
#include "tensor/tensor_math_checks.h"

namespace tandem {

using namespace math_detail;

namespace {

// `shape` without dimension `dim`, or with it set to 1.
Shape reduced_shape(const Shape& shape, int dim, bool keepdim) {
    std::vector<std::int64_t> dims = shape.dims();
    if (keepdim)
        dims[static_cast<std::size_t>(dim)] = 1;
    else
        dims.erase(dims.begin() + dim);
    return Shape(std::move(dims));
}

// Sums along `dim`, each multiplied by `scale` (1 for sums, 1/size for means). The inner loop
// runs over contiguous elements, adding one slice at a time into double accumulators.
Tensor sum_scaled(const Tensor& x, int dim, bool keepdim, std::string_view function, bool is_mean) {
    const Tensor in = host_input(x, function, "x");
    check_dim(in, dim, function, "dim");
    const Around a = around(in.shape(), dim);
    Tensor out = result_like(in, reduced_shape(in.shape(), dim, keepdim));
    const float* p = in.data<float>();
    float* q = out.data<float>();
    // The mean of no elements is NaN (0/0), as in PyTorch.
    const double scale = is_mean ? 1.0 / static_cast<double>(a.size) : 1.0;
    std::vector<double> acc(static_cast<std::size_t>(a.inner));
    for (std::int64_t o = 0; o < a.outer; ++o) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (std::int64_t k = 0; k < a.size; ++k) {
            const float* row = p + (o * a.size + k) * a.inner;
            for (std::int64_t i = 0; i < a.inner; ++i) acc[static_cast<std::size_t>(i)] += row[i];
        }
        for (std::int64_t i = 0; i < a.inner; ++i)
            q[o * a.inner + i] = static_cast<float>(acc[static_cast<std::size_t>(i)] * scale);
    }
    return out;
}

// Whether `v` replaces `best` as the maximum: larger, or NaN (which then stays).
bool beats(float v, float best) {
    return !std::isnan(best) && (v > best || std::isnan(v));
}

}  // namespace

Tensor sum(const Tensor& x, int dim, bool keepdim) {
    return sum_scaled(x, dim, keepdim, "sum", false);
}

Tensor mean(const Tensor& x, int dim, bool keepdim) {
    return sum_scaled(x, dim, keepdim, "mean", true);
}

double sum_all(const Tensor& x) {
    const Tensor in = host_input(x, "sum", "x");
    const float* p = in.data<float>();
    double total = 0;
    for (std::int64_t i = 0; i < in.numel(); ++i) total += p[i];
    return total;
}

double mean_all(const Tensor& x) {
    const Tensor in = host_input(x, "mean", "x");
    return sum_all(in) / static_cast<double>(in.numel());
}

MaxResult max(const Tensor& x, int dim, bool keepdim) {
    const Tensor in = host_input(x, "max", "x");
    check_dim(in, dim, "max", "dim");
    const Around a = around(in.shape(), dim);
    TANDEM_CHECK_AS(ShapeError, a.size > 0)
        << "max: the dimension to reduce of " << in.description()
        << " is empty (the maximum of no values is undefined)";
    const Shape shape = reduced_shape(in.shape(), dim, keepdim);
    MaxResult r{result_like(in, shape), Tensor::empty(shape, in.device(), DType::i32)};
    const float* p = in.data<float>();
    float* values = r.values.data<float>();
    int* indices = r.indices.data<int>();
    for (std::int64_t o = 0; o < a.outer; ++o)
        for (std::int64_t i = 0; i < a.inner; ++i) {
            const float* column = p + o * a.size * a.inner + i;
            float best = column[0];
            std::int64_t at = 0;
            for (std::int64_t k = 1; k < a.size; ++k)
                if (beats(column[k * a.inner], best)) best = column[k * a.inner], at = k;
            values[o * a.inner + i] = best;
            indices[o * a.inner + i] = static_cast<int>(at);
        }
    return r;
}

std::pair<float, std::int64_t> max_all(const Tensor& x) {
    const Tensor in = host_input(x, "max", "x");
    TANDEM_CHECK_AS(ShapeError, in.numel() > 0)
        << "max: " << in.description() << " is empty (the maximum of no values is undefined)";
    const float* p = in.data<float>();
    std::pair<float, std::int64_t> best{p[0], 0};
    for (std::int64_t i = 1; i < in.numel(); ++i)
        if (beats(p[i], best.first)) best = {p[i], i};
    return best;
}

}  // namespace tandem

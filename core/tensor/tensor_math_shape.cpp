// Tensor math that moves elements: matmul, transpose, narrow, cat (tensor_math.h).
#include <cstring>
#include <string>
#include <vector>

#include "tensor/tensor_math.h"
#include "tensor/tensor_math_checks.h"

namespace tandem {

using namespace math_detail;

namespace {

// out (n x m) = a (n x k) @ b (k x m), row by row: the inner loop runs along a row of b and
// of out (contiguous), which the compiler vectorises. Accumulates in f32, as PyTorch does.
void matmul_2d(const float* a, const float* b, float* out, std::int64_t n, std::int64_t k,
               std::int64_t m) {
    std::memset(out, 0, static_cast<std::size_t>(n * m) * sizeof(float));
    for (std::int64_t i = 0; i < n; ++i) {
        float* row = out + i * m;
        for (std::int64_t p = 0; p < k; ++p) {
            const float aip = a[i * k + p];
            const float* brow = b + p * m;
            for (std::int64_t j = 0; j < m; ++j) row[j] += aip * brow[j];
        }
    }
}

std::string shapes(const Tensor& a, const Tensor& b) {
    return a.shape().to_string() + " and " + b.shape().to_string();
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
    const Tensor ca = host_input(a, "matmul", "a");
    const Tensor cb = host_input(b, "matmul", "b");
    check_same_device(a, b, "matmul");
    const Shape& sa = ca.shape();
    const Shape& sb = cb.shape();
    const bool batched = sa.rank() == 3;
    TANDEM_CHECK_AS(ShapeError, (sa.rank() == 2 && sb.rank() == 2) ||
                                    (sa.rank() == 3 && (sb.rank() == 2 || sb.rank() == 3)))
        << "matmul: takes (n x k) @ (k x m), (b x n x k) @ (b x k x m) or (b x n x k) @ (k x m), "
           "got "
        << shapes(ca, cb);
    const std::int64_t batch = batched ? sa[0] : 1;
    const std::int64_t n = sa[sa.rank() - 2], k = sa[sa.rank() - 1];
    const std::int64_t kb = sb[sb.rank() - 2], m = sb[sb.rank() - 1];
    TANDEM_CHECK_AS(ShapeError, k == kb)
        << "matmul: the inner dimensions differ: " << shapes(ca, cb) << " (" << k << " vs " << kb
        << ")";
    TANDEM_CHECK_AS(ShapeError, sb.rank() == 2 || sb[0] == batch)
        << "matmul: the batch dimensions differ: " << shapes(ca, cb);
    Tensor out = result_like(ca, batched ? Shape{batch, n, m} : Shape{n, m});
    // Nothing to write (and an empty tensor's memory may be a null pointer, which memset and
    // memcpy must not be given even for 0 bytes).
    if (out.numel() == 0) return out;
    const std::int64_t b_step = sb.rank() == 3 ? k * m : 0;  // a shared matrix: no step
    for (std::int64_t i = 0; i < batch; ++i)
        matmul_2d(ca.data<float>() + i * n * k, cb.data<float>() + i * b_step,
                  out.data<float>() + i * n * m, n, k, m);
    return out;
}

Tensor transpose(const Tensor& x, int dim0, int dim1) {
    const Tensor in = host_input(x, "transpose", "x");
    check_dim(in, dim0, "transpose", "dim0");
    check_dim(in, dim1, "transpose", "dim1");
    std::vector<std::int64_t> dims = in.shape().dims();
    std::swap(dims[static_cast<std::size_t>(dim0)], dims[static_cast<std::size_t>(dim1)]);
    Tensor out = result_like(in, Shape(dims));
    // The input's strides in the output's dimension order; then walk the output in order.
    std::vector<std::int64_t> strides = in.strides();
    std::swap(strides[static_cast<std::size_t>(dim0)], strides[static_cast<std::size_t>(dim1)]);
    const float* p = in.data<float>();
    float* q = out.data<float>();
    const int rank = in.shape().rank();
    std::vector<std::int64_t> index(static_cast<std::size_t>(rank), 0);
    std::int64_t from = 0;
    for (std::int64_t i = 0; i < out.numel(); ++i) {
        q[i] = p[from];
        for (int d = rank - 1; d >= 0; --d) {
            const auto k = static_cast<std::size_t>(d);
            from += strides[k];
            if (++index[k] < dims[k]) break;
            from -= strides[k] * dims[k];
            index[k] = 0;
        }
    }
    return out;
}

Tensor narrow(const Tensor& x, int dim, std::int64_t start, std::int64_t length) {
    const Tensor in = host_input(x, "narrow", "x");
    check_dim(in, dim, "narrow", "dim");
    const Around a = around(in.shape(), dim);
    TANDEM_CHECK_AS(ShapeError, start >= 0 && length >= 0 && start + length <= a.size)
        << "narrow: elements [" << start << ", " << start + length << ") (0-based) do not fit "
        << "dimension " << dim << " of " << in.description() << " (size " << a.size << ")";
    std::vector<std::int64_t> dims = in.shape().dims();
    dims[static_cast<std::size_t>(dim)] = length;
    Tensor out = result_like(in, Shape(dims));
    if (out.numel() == 0) return out;  // see matmul: no null pointers to memcpy
    const std::size_t chunk = static_cast<std::size_t>(length * a.inner) * sizeof(float);
    for (std::int64_t o = 0; o < a.outer; ++o)
        std::memcpy(out.data<float>() + o * length * a.inner,
                    in.data<float>() + (o * a.size + start) * a.inner, chunk);
    return out;
}

Tensor cat(std::span<const Tensor> xs, int dim) {
    TANDEM_CHECK_AS(ShapeError, !xs.empty()) << "cat: needs at least one tensor";
    std::vector<Tensor> ins;
    for (std::size_t i = 0; i < xs.size(); ++i)
        ins.push_back(host_input(xs[i], "cat", "tensor " + std::to_string(i)));
    const Tensor& first = ins.front();
    check_dim(first, dim, "cat", "dim");
    std::vector<std::int64_t> dims = first.shape().dims();
    dims[static_cast<std::size_t>(dim)] = 0;
    for (std::size_t i = 0; i < ins.size(); ++i) {
        check_same_device(first, ins[i], "cat");
        const Shape& s = ins[i].shape();
        bool fits = s.rank() == first.shape().rank();
        for (int d = 0; fits && d < s.rank(); ++d) fits = d == dim || s[d] == first.shape()[d];
        TANDEM_CHECK_AS(ShapeError, fits)
            << "cat: shapes " << first.shape().to_string() << " and " << s.to_string()
            << " differ outside the dimension they are joined along";
        dims[static_cast<std::size_t>(dim)] += s[dim];
    }
    Tensor out = result_like(first, Shape(dims));
    const Around whole = around(out.shape(), dim);
    float* q = out.data<float>();
    std::int64_t offset = 0;  // where the next tensor's slice starts in each outer row
    for (const Tensor& t : ins) {
        if (t.numel() == 0) continue;  // adds nothing (see matmul: no null pointers to memcpy)
        const Around a = around(t.shape(), dim);
        for (std::int64_t o = 0; o < a.outer; ++o)
            std::memcpy(q + (o * whole.size + offset) * whole.inner,
                        t.data<float>() + o * a.size * a.inner,
                        static_cast<std::size_t>(a.size * a.inner) * sizeof(float));
        offset += a.size;
    }
    return out;
}

}  // namespace tandem

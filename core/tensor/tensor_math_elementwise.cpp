// Element-wise tensor math: a op b with broadcasting, unary functions, pow (tensor_math.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "tensor/tensor_math.h"
#include "tensor/tensor_math_checks.h"

namespace tandem {

using namespace math_detail;

std::string_view op_name(BinaryOp op) {
    switch (op) {
        case BinaryOp::add: return "add";
        case BinaryOp::sub: return "sub";
        case BinaryOp::mul: return "mul";
        case BinaryOp::div: return "div";
    }
    return "?";
}

std::string_view op_name(UnaryOp op) {
    switch (op) {
        case UnaryOp::exp: return "exp";
        case UnaryOp::log: return "log";
        case UnaryOp::tanh: return "tanh";
        case UnaryOp::sigmoid: return "sigmoid";
        case UnaryOp::abs: return "abs";
        case UnaryOp::sqrt: return "sqrt";
        case UnaryOp::neg: return "neg";
    }
    return "?";
}

Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view function) {
    const int rank = std::max(a.rank(), b.rank());
    std::vector<std::int64_t> dims(static_cast<std::size_t>(rank));
    for (int i = 1; i <= rank; ++i) {
        const std::int64_t da = i <= a.rank() ? a[a.rank() - i] : 1;
        const std::int64_t db = i <= b.rank() ? b[b.rank() - i] : 1;
        TANDEM_CHECK_AS(ShapeError, da == db || da == 1 || db == 1)
            << function << ": shapes " << a.to_string() << " and " << b.to_string()
            << " do not broadcast (dimension " << i << " from the end: " << da << " vs " << db
            << "; each pair must be equal or one of them 1)";
        dims[static_cast<std::size_t>(rank - i)] = da == 1 ? db : da;
    }
    return Shape(std::move(dims));
}

namespace {

float apply(BinaryOp op, float a, float b) {
    switch (op) {
        case BinaryOp::add: return a + b;
        case BinaryOp::sub: return a - b;
        case BinaryOp::mul: return a * b;
        case BinaryOp::div: return a / b;
    }
    return 0.f;
}

// out[i] = a[i * sa] op b[i * sb] for i < n: the innermost run of a broadcast (a stride of 0
// repeats one element). The op is a template argument so that each loop vectorises.
template <BinaryOp Op>
void run(const float* a, std::int64_t sa, const float* b, std::int64_t sb, float* out,
         std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = apply(Op, a[i * sa], b[i * sb]);
}

void run(BinaryOp op, const float* a, std::int64_t sa, const float* b, std::int64_t sb, float* out,
         std::int64_t n) {
    switch (op) {
        case BinaryOp::add: return run<BinaryOp::add>(a, sa, b, sb, out, n);
        case BinaryOp::sub: return run<BinaryOp::sub>(a, sa, b, sb, out, n);
        case BinaryOp::mul: return run<BinaryOp::mul>(a, sa, b, sb, out, n);
        case BinaryOp::div: return run<BinaryOp::div>(a, sa, b, sb, out, n);
    }
}

// Strides (in elements) of `shape` seen as `out`'s shape: 0 where it broadcasts.
std::vector<std::int64_t> broadcast_strides(const Shape& shape, const Shape& out) {
    std::vector<std::int64_t> strides(static_cast<std::size_t>(out.rank()), 0);
    std::int64_t stride = 1;
    for (int i = 1; i <= shape.rank(); ++i) {
        const std::int64_t d = shape[shape.rank() - i];
        if (d != 1) strides[static_cast<std::size_t>(out.rank() - i)] = stride;
        stride *= d;
    }
    return strides;
}

// Applies `op` over `out`'s shape, walking every index but the last with an odometer.
void broadcast_apply(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
    const Shape& shape = out.shape();
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* po = out.data<float>();
    if (out.numel() == 0) return;
    if (shape.rank() == 0) {
        po[0] = apply(op, pa[0], pb[0]);
        return;
    }
    const auto sa = broadcast_strides(a.shape(), shape);
    const auto sb = broadcast_strides(b.shape(), shape);
    const int last = shape.rank() - 1;
    const std::int64_t n = shape[last];
    std::vector<std::int64_t> index(static_cast<std::size_t>(last), 0);
    std::int64_t ia = 0, ib = 0;
    for (std::int64_t done = 0; done < out.numel(); done += n) {
        run(op, pa + ia, sa[static_cast<std::size_t>(last)], pb + ib,
            sb[static_cast<std::size_t>(last)], po + done, n);
        for (int d = last - 1; d >= 0; --d) {  // the next index, outer dimensions only
            const auto k = static_cast<std::size_t>(d);
            ia += sa[k];
            ib += sb[k];
            if (++index[k] < shape[d]) break;
            ia -= sa[k] * shape[d];
            ib -= sb[k] * shape[d];
            index[k] = 0;
        }
    }
}

// A number as a rank-0 tensor on `like`'s device, so that scalars take the broadcast path.
Tensor scalar_on(const Tensor& like, float value) {
    Tensor t = result_like(like, Shape{});
    t.data<float>()[0] = value;
    return t;
}

template <class F>
Tensor map(const Tensor& x, std::string_view function, F f) {
    const Tensor in = host_input(x, function, "x");
    Tensor out = result_like(in, in.shape());
    const float* p = in.data<float>();
    float* q = out.data<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) q[i] = f(p[i]);
    return out;
}

// 1 / (1 + e^-x) without overflow for large |x|.
float sigmoid(float x) {
    if (x >= 0.f) return 1.f / (1.f + std::exp(-x));
    const float e = std::exp(x);
    return e / (1.f + e);
}

}  // namespace

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
    const std::string_view function = op_name(op);
    const Tensor ca = host_input(a, function, "left operand");
    const Tensor cb = host_input(b, function, "right operand");
    check_same_device(a, b, function);
    Tensor out = result_like(ca, broadcast_shape(ca.shape(), cb.shape(), function));
    broadcast_apply(op, ca, cb, out);
    return out;
}

Tensor binary(BinaryOp op, const Tensor& a, float b) {
    const Tensor ca = host_input(a, op_name(op), "left operand");
    return binary(op, ca, scalar_on(ca, b));
}

Tensor binary(BinaryOp op, float a, const Tensor& b) {
    const Tensor cb = host_input(b, op_name(op), "right operand");
    return binary(op, scalar_on(cb, a), cb);
}

Tensor unary(UnaryOp op, const Tensor& x) {
    const std::string_view name = op_name(op);
    switch (op) {
        case UnaryOp::exp: return map(x, name, [](float v) { return std::exp(v); });
        case UnaryOp::log: return map(x, name, [](float v) { return std::log(v); });
        case UnaryOp::tanh: return map(x, name, [](float v) { return std::tanh(v); });
        case UnaryOp::sigmoid: return map(x, name, sigmoid);
        case UnaryOp::abs: return map(x, name, [](float v) { return std::fabs(v); });
        case UnaryOp::sqrt: return map(x, name, [](float v) { return std::sqrt(v); });
        case UnaryOp::neg: return map(x, name, [](float v) { return -v; });
    }
    TANDEM_THROW(Error) << "unary: unknown operation";
}

Tensor pow(const Tensor& x, float exponent) {
    // Squares are the common case (losses, variances): exact and faster than std::pow.
    if (exponent == 2.f) return map(x, "pow", [](float v) { return v * v; });
    return map(x, "pow", [exponent](float v) { return std::pow(v, exponent); });
}

}  // namespace tandem

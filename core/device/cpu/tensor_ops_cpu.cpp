// TensorOps on the CPU: plain OpenMP loops over storage (the operations are bandwidth-bound,
// so a vectorised loop is as fast as a library call), and oneDNN reorders for layout copies.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

void check_same(const Tensor& a, const Tensor& b, const char* op) {
    TANDEM_CHECK_AS(ShapeError, a.shape() == b.shape() && a.layout() == b.layout())
        << op << ": " << a.description() << " and " << b.description()
        << " differ in shape or layout";
}

// Element-wise loops are memory-bound: a team pays for itself from twice kParallelMin.
constexpr std::int64_t kElementwiseParallelMin = 2 * kParallelMin;

class TensorOpsCpu final : public TensorOpsKernel {
public:
    explicit TensorOpsCpu(Device& device) : device_(as_cpu(device)) {}

    void add(const Tensor& a, const Tensor& b, Tensor& dst) override {
        element_wise(a, b, dst, "add", [](float x, float y) { return x + y; });
    }

    void add_relu(const Tensor& a, const Tensor& b, Tensor& dst) override {
        element_wise(a, b, dst, "add_relu", [](float x, float y) { return std::max(x + y, 0.f); });
    }

    void multiply(const Tensor& a, const Tensor& b, Tensor& dst) override {
        element_wise(a, b, dst, "multiply", [](float x, float y) { return x * y; });
    }

    void accumulate(Tensor& dst, const Tensor& src) override {
        check_same(dst, src, "accumulate");
        add_into(dst, src);
    }

    void fill(Tensor& dst, float value) override {
        float* z = dst.data<float>();
        const std::int64_t n = dst.numel();
#pragma omp parallel for simd if (n > kElementwiseParallelMin)
        for (std::int64_t i = 0; i < n; ++i) z[i] = value;
    }

    void scale(Tensor& dst, float factor) override {
        float* z = dst.data<float>();
        const std::int64_t n = dst.numel();
#pragma omp parallel for simd if (n > kElementwiseParallelMin)
        for (std::int64_t i = 0; i < n; ++i) z[i] *= factor;
    }

    void blend(Tensor& dst, float keep, const Tensor& src, float take) override {
        check_same(dst, src, "blend");
        float* z = dst.data<float>();
        const float* x = src.data<float>();
        const std::int64_t n = dst.numel();
#pragma omp parallel for simd if (n > kElementwiseParallelMin)
        for (std::int64_t i = 0; i < n; ++i) z[i] = keep * z[i] + take * x[i];
    }

    void copy(const Tensor& src, Tensor& dst) override {
        TANDEM_CHECK_AS(ShapeError, src.shape() == dst.shape() && src.dtype() == dst.dtype())
            << "copy: " << src.description() << " into " << dst.description();
        if (src.layout() == dst.layout() || src.dtype() != DType::f32) {
            if (src.layout() == dst.layout()) {
                std::memcpy(dst.raw(), src.raw(), src.nbytes());
            } else {
                dst.copy_from(src);
            }
            return;
        }
        auto& engine = device_.dnnl_engine();
        auto from = memory_of(src, engine);
        auto to = memory_of(dst, engine);
        dnnl_call("reorder", [&] {
            dnnl::reorder(from, to).execute(device_.dnnl_stream(), from, to);
            device_.dnnl_stream().wait();
        });
    }

    void copy_rows(const Tensor& src, Tensor& dst, const RowCopy& c) override {
        check_row_copy(src, dst, c);
        const std::size_t element = dtype_size(src.dtype());
        const auto* from = static_cast<const char*>(src.raw());
        auto* to = static_cast<char*>(dst.raw());
        const auto bytes = static_cast<std::size_t>(c.width) * element;
#pragma omp parallel for if (c.rows * c.width > kElementwiseParallelMin)
        for (std::int64_t r = 0; r < c.rows; ++r)
            std::memcpy(to + static_cast<std::size_t>(c.dst_offset + r * c.dst_pitch) * element,
                        from + static_cast<std::size_t>(c.src_offset + r * c.src_pitch) * element,
                        bytes);
    }

    void sgd_update(Tensor& weights, const Tensor& grad, Tensor& momentum_buffer, const SgdHyper& h,
                    bool first_step) override {
        check_same(weights, grad, "sgd_update");
        float* w = weights.data<float>();
        const float* g = grad.data<float>();
        float* buf = h.momentum != 0 ? momentum_buffer.data<float>() : nullptr;
        const std::int64_t n = weights.numel();
        // The hyperparameters as locals, and no `simd` on the loops: GCC 12 left them scalar
        // with `h` read inside (the stores to w might change it, as far as it knows) and with
        // `simd` on a loop holding a condition; this way it vectorises them (4x faster).
        const float lr = h.lr, decay = h.weight_decay, momentum = h.momentum,
                    keep = 1.0f - h.dampening;
        const bool nesterov = h.nesterov;
        if (!buf) {
#pragma omp parallel for if (n > kElementwiseParallelMin)
            for (std::int64_t i = 0; i < n; ++i) w[i] -= lr * (g[i] + decay * w[i]);
            return;
        }
#pragma omp parallel for if (n > kElementwiseParallelMin)
        for (std::int64_t i = 0; i < n; ++i) {
            const float d = g[i] + decay * w[i];
            const float b = first_step ? d : momentum * buf[i] + keep * d;
            buf[i] = b;
            w[i] -= lr * (nesterov ? d + momentum * b : b);
        }
    }

    void adam_update(Tensor& weights, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                     const AdamHyper& h) override {
        check_same(weights, grad, "adam_update");
        check_same(weights, exp_avg, "adam_update");
        check_same(weights, exp_avg_sq, "adam_update");
        float* w = weights.data<float>();
        const float* g = grad.data<float>();
        float* m = exp_avg.data<float>();
        float* v = exp_avg_sq.data<float>();
        const float shrink = h.decoupled ? 1.0f - h.lr * h.weight_decay : 1.0f;
        const float l2 = h.decoupled ? 0.0f : h.weight_decay;
        const std::int64_t n = weights.numel();
        // Locals and no `simd`, as in sgd_update: the loop vectorises.
        const float beta1 = h.beta1, beta2 = h.beta2, correction2 = h.bias_correction2_sqrt,
                    eps = h.eps, step_size = h.step_size;
#pragma omp parallel for if (n > kElementwiseParallelMin)
        for (std::int64_t i = 0; i < n; ++i) {
            // PyTorch's order of operations, so results agree to rounding.
            const float wi = w[i] * shrink;
            const float gi = g[i] + l2 * wi;
            m[i] = m[i] * beta1 + (1.0f - beta1) * gi;
            v[i] = v[i] * beta2 + (1.0f - beta2) * gi * gi;
            const float denom = std::sqrt(v[i]) / correction2 + eps;
            w[i] = wi - step_size * m[i] / denom;
        }
    }

    double sum_squares(const Tensor& src) override {
        const float* x = src.data<float>();
        const std::int64_t n = src.numel();
        double total = 0;
#pragma omp parallel for reduction(+ : total) if (n > kElementwiseParallelMin)
        for (std::int64_t i = 0; i < n; ++i) total += double(x[i]) * double(x[i]);
        return total;
    }

    bool unscale(const std::vector<Tensor*>& tensors, float factor) override {
        bool finite = true;
        for (Tensor* t : tensors) {
            float* z = t->data<float>();
            const std::int64_t n = t->numel();
            int bad = 0;
#pragma omp parallel for simd reduction(| : bad) if (n > kElementwiseParallelMin)
            for (std::int64_t i = 0; i < n; ++i) {
                z[i] *= factor;
                bad |= !std::isfinite(z[i]);
            }
            finite = finite && bad == 0;
        }
        return finite;
    }

private:
    // dst = f(a, b) element by element; all three the same shape and layout.
    template <class F>
    static void element_wise(const Tensor& a, const Tensor& b, Tensor& dst, const char* what, F f) {
        check_same(a, b, what);
        check_same(a, dst, what);
        const float* x = a.data<float>();
        const float* y = b.data<float>();
        float* z = dst.data<float>();
        const std::int64_t n = a.numel();
#pragma omp parallel for simd if (n > kElementwiseParallelMin)
        for (std::int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
    }

    CpuDevice& device_;
};

}  // namespace

std::unique_ptr<TensorOpsKernel> make_tensor_ops_cpu(Device& device, const TensorOpsConfig&) {
    return std::make_unique<TensorOpsCpu>(device);
}

}  // namespace tandem::cpu

// TensorOps on the GPU: element-wise kernels (kernels.cu) on the compute stream, layout copies
// through cudnnTransformTensor, and a deterministic sum of squares (fixed per-block partials,
// summed on the host in order).
#include <string>
#include <vector>

#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

void check_same(const Tensor& a, const Tensor& b, const char* op) {
    TANDEM_CHECK_AS(ShapeError, a.shape() == b.shape() && a.layout() == b.layout())
        << op << ": " << a.description() << " and " << b.description()
        << " differ in shape or layout";
}

class TensorOpsCuda final : public TensorOpsKernel {
public:
    explicit TensorOpsCuda(Device& device) : device_(as_cuda(device)) {}

    void add(const Tensor& a, const Tensor& b, Tensor& dst) override {
        element_wise(a, b, dst, "add", kernels::add);
    }

    void add_relu(const Tensor& a, const Tensor& b, Tensor& dst) override {
        element_wise(a, b, dst, "add_relu", kernels::add_relu);
    }

    void multiply(const Tensor& a, const Tensor& b, Tensor& dst) override {
        element_wise(a, b, dst, "multiply", kernels::multiply);
    }

    void accumulate(Tensor& dst, const Tensor& src) override {
        check_same(dst, src, "accumulate");
        const auto n = dst.numel();
        float* z = float_ptr(dst, device_, n, "accumulate dst");
        const float* x = float_ptr(src, device_, n, "accumulate src");
        device_.activate();
        kernels::accumulate(z, x, n, stream());
        check_launch("accumulate");
    }

    void fill(Tensor& dst, float value) override {
        float* z = float_ptr(dst, device_, -1, "fill dst");
        device_.activate();
        kernels::fill(z, value, dst.numel(), stream());
        check_launch("fill");
    }

    void scale(Tensor& dst, float factor) override {
        float* z = float_ptr(dst, device_, -1, "scale dst");
        device_.activate();
        kernels::scale(z, factor, dst.numel(), stream());
        check_launch("scale");
    }

    void blend(Tensor& dst, float keep, const Tensor& src, float take) override {
        check_same(dst, src, "blend");
        const auto n = dst.numel();
        float* z = float_ptr(dst, device_, n, "blend dst");
        const float* x = float_ptr(src, device_, n, "blend src");
        device_.activate();
        kernels::blend(z, keep, x, take, n, stream());
        check_launch("blend");
    }

    void copy(const Tensor& src, Tensor& dst) override {
        TANDEM_CHECK_AS(ShapeError, src.shape() == dst.shape() && src.dtype() == dst.dtype())
            << "copy: " << src.description() << " into " << dst.description();
        void* to = device_ptr(dst, device_, dst.dtype(), -1, "copy dst");
        const void* from = device_ptr(src, device_, src.dtype(), -1, "copy src");
        device_.activate();
        if (src.layout() == dst.layout()) {
            TANDEM_CUDA_CALL(
                cudaMemcpyAsync(to, from, src.nbytes(), cudaMemcpyDeviceToDevice, stream()));
            return;
        }
        if (src.dtype() != DType::f32) {  // integer tensors across layouts: rare, via the host
            dst.copy_from(src);
            return;
        }
        const Shape& s = src.shape();  // channels_last implies rank 4
        const TensorDesc a(dims4(s[0], s[1], s[2], s[3], src.layout(), "copy src"));
        const TensorDesc b(dims4(s[0], s[1], s[2], s[3], dst.layout(), "copy dst"));
        TANDEM_CUDNN_CALL(
            cudnnTransformTensor(device_.cudnn(), &kOne, a.get(), from, &kZero, b.get(), to));
    }

    void copy_rows(const Tensor& src, Tensor& dst, const RowCopy& c) override {
        check_row_copy(src, dst, c);
        if (c.rows == 0 || c.width == 0) return;
        const std::size_t element = dtype_size(src.dtype());
        const auto* from =
            static_cast<const char*>(device_ptr(src, device_, src.dtype(), -1, "copy_rows src"));
        auto* to = static_cast<char*>(device_ptr(dst, device_, dst.dtype(), -1, "copy_rows dst"));
        device_.activate();
        TANDEM_CUDA_CALL(cudaMemcpy2DAsync(
            to + c.dst_offset * element, c.dst_pitch * element, from + c.src_offset * element,
            c.src_pitch * element, c.width * element, c.rows, cudaMemcpyDeviceToDevice, stream()));
    }

    void sgd_update(Tensor& weights, const Tensor& grad, Tensor& momentum_buffer, const SgdHyper& h,
                    bool first_step) override {
        check_same(weights, grad, "sgd_update");
        const auto n = weights.numel();
        float* w = float_ptr(weights, device_, n, "sgd_update weights");
        const float* g = float_ptr(grad, device_, n, "sgd_update grad");
        float* buf = h.momentum != 0
                         ? float_ptr(momentum_buffer, device_, n, "sgd_update momentum buffer")
                         : nullptr;
        device_.activate();
        kernels::sgd_update(w, g, buf, n, h.lr, h.momentum, h.dampening, h.weight_decay, h.nesterov,
                            first_step, stream());
        check_launch("sgd_update");
    }

    void adam_update(Tensor& weights, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                     const AdamHyper& h) override {
        check_same(weights, grad, "adam_update");
        check_same(weights, exp_avg, "adam_update");
        check_same(weights, exp_avg_sq, "adam_update");
        const auto n = weights.numel();
        float* w = float_ptr(weights, device_, n, "adam_update weights");
        const float* g = float_ptr(grad, device_, n, "adam_update grad");
        float* m = float_ptr(exp_avg, device_, n, "adam_update exp_avg");
        float* v = float_ptr(exp_avg_sq, device_, n, "adam_update exp_avg_sq");
        device_.activate();
        kernels::adam_update(w, g, m, v, n, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay,
                             h.decoupled, h.step_size, h.bias_correction2_sqrt, stream());
        check_launch("adam_update");
    }

    double sum_squares(const Tensor& src) override {
        const float* x = float_ptr(src, device_, -1, "sum_squares src");
        device_.activate();
        Tensor partials = Tensor::empty({kernels::kSumBlocks * 2}, device_);  // doubles
        kernels::sum_squares(x, src.numel(), static_cast<double*>(partials.raw()), stream());
        check_launch("sum_squares");
        std::vector<double> host(kernels::kSumBlocks);
        device_.copy_to_host(host.data(), partials.raw(), host.size() * sizeof(double));
        double total = 0;
        for (double v : host) total += v;
        return total;
    }

    bool unscale(const std::vector<Tensor*>& tensors, float factor) override {
        device_.activate();
        // Set by any kernel that meets a value not finite; read once, after all of them.
        Tensor flag = Tensor::empty({1}, device_, DType::i32);
        TANDEM_CUDA_CALL(cudaMemsetAsync(flag.raw(), 0, sizeof(int), stream()));
        for (Tensor* t : tensors) {
            float* z = float_ptr(*t, device_, -1, "unscale");
            kernels::unscale(z, factor, t->numel(), static_cast<int*>(flag.raw()), stream());
            check_launch("unscale");
        }
        int nonfinite = 0;
        device_.copy_to_host(&nonfinite, flag.raw(), sizeof nonfinite);
        return nonfinite == 0;
    }

private:
    using ElementWise = void (*)(const float*, const float*, float*, std::int64_t, cudaStream_t);

    // dst = kernel(a, b) element by element; all three the same shape and layout.
    void element_wise(const Tensor& a, const Tensor& b, Tensor& dst, const std::string& what,
                      ElementWise kernel) {
        check_same(a, b, what.c_str());
        check_same(a, dst, what.c_str());
        const auto n = a.numel();
        const float* x = float_ptr(a, device_, n, what + " a");
        const float* y = float_ptr(b, device_, n, what + " b");
        float* z = float_ptr(dst, device_, n, what + " dst");
        device_.activate();
        kernel(x, y, z, n, stream());
        check_launch(what);
    }

    cudaStream_t stream() const { return device_.compute_stream(); }
    CudaDevice& device_;
};

}  // namespace

std::unique_ptr<TensorOpsKernel> make_tensor_ops_cuda(Device& device, const TensorOpsConfig&) {
    return std::make_unique<TensorOpsCuda>(device);
}

}  // namespace tandem::cuda

// Linear on cuBLAS: the three products of a fully connected layer are single SGEMMs on the
// row-major tensors seen as column-major transposes (plan.h has the arguments and the
// reasoning; the CPU-side tests check them against the reference kernel). The weight gradient
// accumulates through beta = 1; the bias gradient is a GEMV of diff_dst with a vector of ones
// (beta = 1 too), and the bias itself is added by a small kernel after the forward GEMM.
//
// In fp16 and bf16 (device/precision.h) the same products are cublasGemmEx calls on 16-bit
// copies of the operands (half_operands.h), summed in float32 (CUBLAS_COMPUTE_32F, on tensor
// cores) into the float32 results directly, with the same beta. The bias and its gradient stay
// float32: the GEMV sums the unrounded incoming gradient.
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/half_operands.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

class LinearCublas final : public LinearKernel {
public:
    LinearCublas(Device& device, const LinearConfig& c)
        : device_(as_cuda(device)), config_(c), half_(device_, c.precision),
          forward_(linear_forward_gemm(c)), data_(linear_backward_data_gemm(c)),
          weights_(linear_backward_weights_gemm(c)) {
        if (c.bias) {
            ones_ = Tensor::empty({c.n}, device_);
            device_.activate();
            kernels::fill(static_cast<float*>(ones_.raw()), 1.f, c.n, device_.compute_stream());
            check_launch("fill (ones)");
        }
    }

    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        const auto& c = config_;
        const float* x = float_ptr(src, device_, c.n * c.in_features, "Linear forward src");
        const float* w =
            float_ptr(weights, device_, c.out_features * c.in_features, "Linear forward weights");
        float* y = float_ptr(dst, device_, c.n * c.out_features, "Linear forward dst");
        device_.activate();
        Tensor w_half, x_half;  // mixed precision's 16-bit copies, for this call
        gemm(forward_, half_.read(w, weights_numel(), w_half), half_.read(x, src_numel(), x_half),
             y, "Linear forward");
        if (!c.bias) return;
        const float* b = float_ptr(bias, device_, c.out_features, "Linear forward bias");
        kernels::add_bias_rows(y, b, c.n, c.out_features, device_.compute_stream());
        check_launch("add_bias_rows");
    }

    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        const float* dy = diff_dst_ptr(diff_dst);
        const float* w = float_ptr(weights, device_, weights_numel(), "Linear backward weights");
        float* dx = float_ptr(diff_src, device_, src_numel(), "Linear backward diff_src");
        device_.activate();
        Tensor dy_half;
        data_with(half_.read(dy, dst_numel(), dy_half), w, dx);
    }

    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        const float* x = float_ptr(src, device_, src_numel(), "Linear backward src");
        const float* dy = diff_dst_ptr(diff_dst);
        float* dw = float_ptr(diff_weights, device_, weights_numel(), "Linear diff_weights");
        float* db = diff_bias_ptr(diff_bias);
        device_.activate();
        Tensor dy_half;
        weights_with(x, half_.read(dy, dst_numel(), dy_half), dy, dw, db);
    }

    // Both gradients from one narrowing of diff_dst (mixed precision).
    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& weights,
                  Tensor& diff_src, Tensor& diff_weights, Tensor& diff_bias) override {
        const float* x = float_ptr(src, device_, src_numel(), "Linear backward src");
        const float* dy = diff_dst_ptr(diff_dst);
        const float* w = float_ptr(weights, device_, weights_numel(), "Linear backward weights");
        float* dx = float_ptr(diff_src, device_, src_numel(), "Linear backward diff_src");
        float* dw = float_ptr(diff_weights, device_, weights_numel(), "Linear diff_weights");
        float* db = diff_bias_ptr(diff_bias);
        device_.activate();
        Tensor dy_half;
        const void* dy_op = half_.read(dy, dst_numel(), dy_half);
        weights_with(x, dy_op, dy, dw, db);
        data_with(dy_op, w, dx);
    }

private:
    // diff_src = diff_dst W, diff_dst as the products read it (`dy_op`: float32, or its
    // 16-bit copy).
    void data_with(const void* dy_op, const float* w, float* dx) {
        Tensor w_half;
        gemm(data_, half_.read(w, weights_numel(), w_half), dy_op, dx, "Linear backward_data");
    }

    // diff_W += diff_dst^T src, diff_dst as the products read it (`dy_op`); diff_bias (when
    // not null) += the column sums of the float32 diff_dst.
    void weights_with(const float* x, const void* dy_op, const float* dy, float* dw, float* db) {
        const auto& c = config_;
        Tensor x_half;
        gemm(weights_, half_.read(x, src_numel(), x_half), dy_op, dw, "Linear backward_weights");
        if (!db) return;
        // diff_bias (out) += diff_dst^T (out x n, column-major view) * ones (n).
        check_cublas(cublasSgemv(device_.cublas(), CUBLAS_OP_N, int(c.out_features), int(c.n),
                                 &kOne, dy, int(c.out_features),
                                 static_cast<const float*>(ones_.raw()), 1, &kOne, db, 1),
                     "cublasSgemv (Linear diff_bias)");
    }

    // C = op(A) op(B) (+ C with beta 1), A and B as the products read them, C float32:
    // cublasSgemm in fp32 (and tf32, under the handle's math mode), cublasGemmEx on 16-bit
    // operands otherwise.
    void gemm(const Gemm& g, const void* a, const void* b, float* c, const char* pass) {
        const cublasOperation_t op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        const cublasOperation_t op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        const bool narrowed = half_.narrowed();
        const cublasStatus_t status =
            narrowed
                ? cublasGemmEx(device_.cublas(), op_a, op_b, g.m, g.n, g.k, &kOne, a,
                               half_.cublas_type(), g.lda, b, half_.cublas_type(), g.ldb, &g.beta,
                               c, CUDA_R_32F, g.ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
                : cublasSgemm(device_.cublas(), op_a, op_b, g.m, g.n, g.k, &kOne,
                              static_cast<const float*>(a), g.lda, static_cast<const float*>(b),
                              g.ldb, &g.beta, c, g.ldc);
        if (status == CUBLAS_STATUS_SUCCESS) return;
        check_cublas(status, std::string(narrowed ? "cublasGemmEx (" : "cublasSgemm (") + pass +
                                 (narrowed ? ", " + std::string(precision_name(config_.precision))
                                           : std::string()) +
                                 ")");
    }

    const float* diff_dst_ptr(const Tensor& diff_dst) const {
        return float_ptr(diff_dst, device_, dst_numel(), "Linear backward diff_dst");
    }
    // diff_bias's address, or null for a kernel without bias.
    float* diff_bias_ptr(Tensor& diff_bias) const {
        if (!config_.bias) return nullptr;
        return float_ptr(diff_bias, device_, config_.out_features, "Linear diff_bias");
    }
    std::int64_t src_numel() const { return config_.n * config_.in_features; }
    std::int64_t weights_numel() const { return config_.out_features * config_.in_features; }
    std::int64_t dst_numel() const { return config_.n * config_.out_features; }

    CudaDevice& device_;
    LinearConfig config_;
    HalfOperands half_;
    Gemm forward_, data_, weights_;
    Tensor ones_;
};

}  // namespace

std::unique_ptr<LinearKernel> make_linear_cublas(Device& device, const LinearConfig& config) {
    return std::make_unique<LinearCublas>(device, config);
}

}  // namespace tandem::cuda

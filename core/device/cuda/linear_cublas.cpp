// Linear on cuBLAS: the three products of a fully connected layer are single SGEMMs on the
// row-major tensors seen as column-major transposes (plan.h has the arguments and the
// reasoning; the CPU-side tests check them against the reference kernel). The weight gradient
// accumulates through beta = 1; the bias gradient is a GEMV of diff_dst with a vector of ones
// (beta = 1 too), and the bias itself is added by a small kernel after the forward GEMM.
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

class LinearCublas final : public LinearKernel {
public:
    LinearCublas(Device& device, const LinearConfig& c)
        : device_(as_cuda(device)), config_(c), forward_(linear_forward_gemm(c)),
          data_(linear_backward_data_gemm(c)), weights_(linear_backward_weights_gemm(c)) {
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
        gemm(forward_, w, x, y, "cublasSgemm (Linear forward)");
        if (!c.bias) return;
        const float* b = float_ptr(bias, device_, c.out_features, "Linear forward bias");
        kernels::add_bias_rows(y, b, c.n, c.out_features, device_.compute_stream());
        check_launch("add_bias_rows");
    }

    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        const auto& c = config_;
        const float* dy =
            float_ptr(diff_dst, device_, c.n * c.out_features, "Linear backward diff_dst");
        const float* w =
            float_ptr(weights, device_, c.out_features * c.in_features, "Linear backward weights");
        float* dx = float_ptr(diff_src, device_, c.n * c.in_features, "Linear backward diff_src");
        device_.activate();
        gemm(data_, w, dy, dx, "cublasSgemm (Linear backward_data)");
    }

    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        const auto& c = config_;
        const float* x = float_ptr(src, device_, c.n * c.in_features, "Linear backward src");
        const float* dy =
            float_ptr(diff_dst, device_, c.n * c.out_features, "Linear backward diff_dst");
        float* dw =
            float_ptr(diff_weights, device_, c.out_features * c.in_features, "Linear diff_weights");
        device_.activate();
        gemm(weights_, x, dy, dw, "cublasSgemm (Linear backward_weights)");
        if (!c.bias) return;
        float* db = float_ptr(diff_bias, device_, c.out_features, "Linear diff_bias");
        // diff_bias (out) += diff_dst^T (out x n, column-major view) * ones (n).
        check_cublas(cublasSgemv(device_.cublas(), CUBLAS_OP_N, int(c.out_features), int(c.n),
                                 &kOne, dy, int(c.out_features),
                                 static_cast<const float*>(ones_.raw()), 1, &kOne, db, 1),
                     "cublasSgemv (Linear diff_bias)");
    }

private:
    void gemm(const Gemm& g, const float* a, const float* b, float* c, const char* call) {
        check_cublas(cublasSgemm(device_.cublas(), g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, &kOne, a,
                                 g.lda, b, g.ldb, &g.beta, c, g.ldc),
                     call);
    }

    CudaDevice& device_;
    LinearConfig config_;
    Gemm forward_, data_, weights_;
    Tensor ones_;
};

}  // namespace

std::unique_ptr<LinearKernel> make_linear_cublas(Device& device, const LinearConfig& config) {
    return std::make_unique<LinearCublas>(device, config);
}

}  // namespace tandem::cuda

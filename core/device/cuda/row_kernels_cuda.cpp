// Softmax and layer norm on a GPU: row_math.h's row functions, one thread per row (kernels.cu),
// on the compute stream.
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

class SoftmaxCuda final : public SoftmaxKernel {
public:
    SoftmaxCuda(Device& device, const SoftmaxConfig& c) : device_(as_cuda(device)), c_(c) {}

    void forward(const Tensor& src, Tensor& dst) override {
        const std::int64_t n = c_.outer * c_.size * c_.inner;
        const float* x = float_ptr(src, device_, n, "Softmax src");
        float* y = float_ptr(dst, device_, n, "Softmax dst");
        device_.activate();
        kernels::softmax_forward(x, y, c_.outer, c_.size, c_.inner, c_.log,
                                 device_.compute_stream());
        check_launch("softmax_forward");
    }

    void backward(const Tensor& dst, const Tensor& diff_dst, Tensor& diff_src) override {
        const std::int64_t n = c_.outer * c_.size * c_.inner;
        const float* y = float_ptr(dst, device_, n, "Softmax dst");
        const float* dy = float_ptr(diff_dst, device_, n, "Softmax diff_dst");
        float* dx = float_ptr(diff_src, device_, n, "Softmax diff_src");
        device_.activate();
        kernels::softmax_backward(y, dy, dx, c_.outer, c_.size, c_.inner, c_.log,
                                  device_.compute_stream());
        check_launch("softmax_backward");
    }

private:
    CudaDevice& device_;
    SoftmaxConfig c_;
};

class LayerNormCuda final : public LayerNormKernel {
public:
    LayerNormCuda(Device& device, const LayerNormConfig& c) : device_(as_cuda(device)), c_(c) {}

    void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& dst,
                 Tensor& mean, Tensor& rstd) override {
        const std::int64_t n = c_.rows * c_.cols;
        const float* x = float_ptr(src, device_, n, "LayerNorm src");
        float* y = float_ptr(dst, device_, n, "LayerNorm dst");
        const float* g =
            c_.affine ? float_ptr(gamma, device_, c_.cols, "LayerNorm gamma") : nullptr;
        const float* b = c_.affine ? float_ptr(beta, device_, c_.cols, "LayerNorm beta") : nullptr;
        float* m = float_ptr(mean, device_, c_.rows, "LayerNorm mean");
        float* r = float_ptr(rstd, device_, c_.rows, "LayerNorm rstd");
        device_.activate();
        kernels::layer_norm_forward(x, y, g, b, c_.rows, c_.cols, c_.eps, m, r,
                                    device_.compute_stream());
        check_launch("layer_norm_forward");
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                  const Tensor& mean, const Tensor& rstd, Tensor& diff_src, Tensor& diff_gamma,
                  Tensor& diff_beta) override {
        const std::int64_t n = c_.rows * c_.cols;
        const float* x = float_ptr(src, device_, n, "LayerNorm src");
        const float* dy = float_ptr(diff_dst, device_, n, "LayerNorm diff_dst");
        const float* g =
            c_.affine ? float_ptr(gamma, device_, c_.cols, "LayerNorm gamma") : nullptr;
        const float* m = float_ptr(mean, device_, c_.rows, "LayerNorm mean");
        const float* r = float_ptr(rstd, device_, c_.rows, "LayerNorm rstd");
        float* dx = float_ptr(diff_src, device_, n, "LayerNorm diff_src");
        float* dg =
            c_.affine ? float_ptr(diff_gamma, device_, c_.cols, "LayerNorm diff_gamma") : nullptr;
        float* db =
            c_.affine ? float_ptr(diff_beta, device_, c_.cols, "LayerNorm diff_beta") : nullptr;
        device_.activate();
        kernels::layer_norm_backward(x, dy, g, m, r, c_.rows, c_.cols, dx, dg, db,
                                     device_.compute_stream());
        check_launch("layer_norm_backward");
    }

private:
    CudaDevice& device_;
    LayerNormConfig c_;
};

}  // namespace

std::unique_ptr<SoftmaxKernel> make_softmax_cuda(Device& device, const SoftmaxConfig& c) {
    return std::make_unique<SoftmaxCuda>(device, c);
}

std::unique_ptr<LayerNormKernel> make_layer_norm_cuda(Device& device, const LayerNormConfig& c) {
    return std::make_unique<LayerNormCuda>(device, c);
}

}  // namespace tandem::cuda

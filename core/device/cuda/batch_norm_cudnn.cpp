// Batch normalisation (spatial: one mean and variance per channel) on cuDNN.
//
// Training forward asks cuDNN for the batch statistics through its running-average outputs
// with an averaging factor of 1, so they receive exactly this batch's mean and unbiased
// variance; the kernel contract wants the biased variance, a rescale by (m-1)/m. Backward
// passes the given mean and 1/sqrt(variance + eps) as cuDNN's saved statistics (what cuDNN
// itself saves), so statistics synchronised over several devices are honoured. In evaluation
// the statistics are constants, which cuDNN's backward cannot express: our own kernel does it.
//
// Channels-last tensors take our own kernels throughout (batch_norm_nhwc.cuh): cuDNN's ran at
// a few percent of the memory bandwidth on them.
#include "device/cuda/batch_norm_nhwc.cuh"
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

class BatchNormCudnn final : public BatchNormKernel {
public:
    BatchNormCudnn(Device& device, const BatchNormConfig& c)
        : device_(as_cuda(device)), config_(c), numel_(c.n * c.c * c.h * c.w),
          nhwc_(c.layout == Layout::channels_last), rows_(c.n * c.h * c.w),
          x_(dims4(c.n, c.c, c.h, c.w, c.layout, "BatchNorm2d src")),
          stats_(dims4(1, c.c, 1, 1, Layout::contiguous, "BatchNorm2d statistics")) {}

    void forward(const Tensor& src, const Tensor& gamma, const Tensor& beta, Tensor& mean,
                 Tensor& variance, Tensor& dst) override {
        const auto& c = config_;
        const void* x = float_ptr(src, device_, numel_, "BatchNorm2d forward src");
        void* y = float_ptr(dst, device_, numel_, "BatchNorm2d forward dst");
        const void* g = float_ptr(gamma, device_, c.c, "BatchNorm2d gamma");
        const void* b = float_ptr(beta, device_, c.c, "BatchNorm2d beta");
        float* m = float_ptr(mean, device_, c.c, "BatchNorm2d mean");
        float* v = float_ptr(variance, device_, c.c, "BatchNorm2d variance");
        device_.activate();
        const cudaStream_t s = device_.compute_stream();
        if (nhwc_) {
            if (c.training) {
                kernels::bn_nhwc_statistics(static_cast<const float*>(x), rows_, c.c, m, v,
                                            scratch(), s);
                check_launch("bn_nhwc_statistics");
            }
            kernels::bn_nhwc_normalize(static_cast<const float*>(x), m, v, c.epsilon,
                                       static_cast<const float*>(g), static_cast<const float*>(b),
                                       static_cast<float*>(y), rows_, c.c, s);
            check_launch("bn_nhwc_normalize");
            return;
        }
        if (!c.training) {
            TANDEM_CUDNN_CALL(cudnnBatchNormalizationForwardInference(
                device_.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x_.get(), x, x_.get(), y,
                stats_.get(), g, b, m, v, double(c.epsilon)));
            return;
        }
        // The "running" outputs are blended as new * 1 + old * 0: zero them first, since
        // 0 * NaN from uninitialised memory would still be NaN.
        TANDEM_CUDA_CALL(cudaMemsetAsync(m, 0, std::size_t(c.c) * sizeof(float), s));
        TANDEM_CUDA_CALL(cudaMemsetAsync(v, 0, std::size_t(c.c) * sizeof(float), s));
        TANDEM_CUDNN_CALL(cudnnBatchNormalizationForwardTraining(
            device_.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x_.get(), x, x_.get(), y,
            stats_.get(), g, b, 1.0, m, v, double(c.epsilon), nullptr, nullptr));
        kernels::scale(v, unbiased_to_biased(c.n * c.h * c.w), c.c, s);
        check_launch("scale (biased variance)");
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& gamma,
                  const Tensor& mean, const Tensor& variance, Tensor& diff_src, Tensor& diff_gamma,
                  Tensor& diff_beta) override {
        const auto& c = config_;
        const float* x = float_ptr(src, device_, numel_, "BatchNorm2d backward src");
        const float* dy = float_ptr(diff_dst, device_, numel_, "BatchNorm2d backward diff_dst");
        float* dx = float_ptr(diff_src, device_, numel_, "BatchNorm2d backward diff_src");
        const float* g = float_ptr(gamma, device_, c.c, "BatchNorm2d gamma");
        const float* m = float_ptr(mean, device_, c.c, "BatchNorm2d mean");
        const float* v = float_ptr(variance, device_, c.c, "BatchNorm2d variance");
        float* dg = float_ptr(diff_gamma, device_, c.c, "BatchNorm2d diff_gamma");
        float* db = float_ptr(diff_beta, device_, c.c, "BatchNorm2d diff_beta");
        device_.activate();
        const cudaStream_t s = device_.compute_stream();
        if (nhwc_) {
            kernels::bn_nhwc_backward(x, dy, g, m, v, c.epsilon, c.training, dx, dg, db, rows_, c.c,
                                      scratch(), s);
            check_launch("bn_nhwc_backward");
            return;
        }
        if (!c.training) {
            kernels::batch_norm_backward_constant_stats(x, dy, g, m, v, c.epsilon, dx, dg, db, c.n,
                                                        c.c, c.h * c.w, s);
            check_launch("batch_norm_backward_constant_stats");
            return;
        }
        Tensor inv_std = Tensor::empty({c.c}, device_);
        kernels::inverse_std(v, c.epsilon, static_cast<float*>(inv_std.raw()), c.c, s);
        check_launch("inverse_std");
        // alphaParamDiff = betaParamDiff = 1: the parameter gradients are added (contract).
        TANDEM_CUDNN_CALL(cudnnBatchNormalizationBackward(
            device_.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne, &kOne, x_.get(), x,
            x_.get(), dy, x_.get(), dx, stats_.get(), g, dg, db, double(c.epsilon), m,
            static_cast<float*>(inv_std.raw())));
    }

private:
    // The nhwc kernels' partial sums, from the device's allocator; made on first use.
    double* scratch() {
        if (!scratch_.defined()) {
            const std::int64_t doubles = kernels::bn_nhwc_scratch_doubles(rows_, config_.c);
            scratch_ = Tensor::empty({2 * doubles}, device_);  // two floats a double
        }
        return static_cast<double*>(scratch_.raw());
    }

    CudaDevice& device_;
    BatchNormConfig config_;
    std::int64_t numel_;
    bool nhwc_;
    std::int64_t rows_;  // n x h x w: the values of each channel
    Tensor scratch_;
    TensorDesc x_, stats_;
};

}  // namespace

std::unique_ptr<BatchNormKernel> make_batch_norm_cudnn(Device& device,
                                                       const BatchNormConfig& config) {
    return std::make_unique<BatchNormCudnn>(device, config);
}

}  // namespace tandem::cuda

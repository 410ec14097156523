// Local response normalisation across channels on GPUs: on cuDNN (cudnnLRNCrossChannel*) where
// cuDNN computes what the CPU kernels compute (odd windows of at most 16 channels, k >= 1e-5,
// beta >= 0.01: plan.h, lrn_unsupported), on our own kernel (kernels.cu, lrn_pixel.h) for
// every other configuration. Either keeps in the workspace what its backward needs and the
// kernel contract does not pass back: cuDNN's backward takes forward's output, ours the scales.
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

class LrnCudnn final : public LrnKernel {
public:
    LrnCudnn(Device& device, const LrnConfig& c)
        : device_(as_cuda(device)),
          numel_(c.n * c.c * c.h * c.w),
          x_(dims4(c.n, c.c, c.h, c.w, c.layout, "LRN src")) {
        TANDEM_CUDNN_CALL(cudnnCreateLRNDescriptor(&lrn_));
        try {
            TANDEM_CUDNN_CALL(cudnnSetLRNDescriptor(lrn_, unsigned(c.size), double(c.alpha),
                                                    double(c.beta), double(c.k)));
        } catch (...) {
            cudnnDestroyLRNDescriptor(lrn_);
            throw;
        }
    }
    ~LrnCudnn() override { cudnnDestroyLRNDescriptor(lrn_); }

    std::size_t workspace_bytes() const override { return std::size_t(numel_) * sizeof(float); }

    void forward(const Tensor& src, Tensor& dst, Tensor& workspace) override {
        const void* x = float_ptr(src, device_, numel_, "LRN forward src");
        void* y = float_ptr(dst, device_, numel_, "LRN forward dst");
        device_.activate();
        TANDEM_CUDNN_CALL(cudnnLRNCrossChannelForward(device_.cudnn(), lrn_,
                                                      CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne,
                                                      x_.get(), x, &kZero, x_.get(), y));
        if (!workspace.defined()) return;  // evaluation: no backward follows
        void* saved = device_ptr(workspace, device_, DType::u8, std::int64_t(workspace_bytes()),
                                 "LRN forward workspace");
        TANDEM_CUDA_CALL(cudaMemcpyAsync(saved, y, workspace_bytes(), cudaMemcpyDeviceToDevice,
                                         device_.compute_stream()));
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& workspace,
                  Tensor& diff_src) override {
        TANDEM_CHECK(workspace.defined()) << "LRN backward needs the workspace of a training forward";
        const void* x = float_ptr(src, device_, numel_, "LRN backward src");
        const void* dy = float_ptr(diff_dst, device_, numel_, "LRN backward diff_dst");
        void* dx = float_ptr(diff_src, device_, numel_, "LRN backward diff_src");
        const void* y = device_ptr(workspace, device_, DType::u8, std::int64_t(workspace_bytes()),
                                   "LRN backward workspace");
        device_.activate();
        TANDEM_CUDNN_CALL(cudnnLRNCrossChannelBackward(
            device_.cudnn(), lrn_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne, x_.get(), y, x_.get(), dy,
            x_.get(), x, &kZero, x_.get(), dx));
    }

private:
    CudaDevice& device_;
    std::int64_t numel_;
    TensorDesc x_;
    cudnnLRNDescriptor_t lrn_ = nullptr;
};

class LrnCuda final : public LrnKernel {
public:
    LrnCuda(Device& device, const LrnConfig& c)
        : device_(as_cuda(device)),
          numel_(c.n * c.c * c.h * c.w),
          shape_{c.n, c.c, c.h * c.w, c.layout == Layout::channels_last, c.size, c.alpha, c.beta, c.k} {
        TANDEM_CHECK_AS(ConfigError, c.size >= 1) << "LRN on " << device.name()
                                                  << ": the window must hold at least one channel, not " << c.size;
    }

    std::size_t workspace_bytes() const override { return std::size_t(numel_) * sizeof(float); }

    void forward(const Tensor& src, Tensor& dst, Tensor& workspace) override {
        const float* x = float_ptr(src, device_, numel_, "LRN forward src");
        float* y = float_ptr(dst, device_, numel_, "LRN forward dst");
        float* scale = workspace.defined()  // evaluation: no backward follows
                           ? static_cast<float*>(device_ptr(workspace, device_, DType::u8,
                                                            std::int64_t(workspace_bytes()),
                                                            "LRN forward workspace"))
                           : nullptr;
        device_.activate();
        kernels::lrn_forward(shape_, x, y, scale, device_.compute_stream());
        check_launch("lrn_forward");
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& workspace,
                  Tensor& diff_src) override {
        TANDEM_CHECK(workspace.defined()) << "LRN backward needs the workspace of a training forward";
        const float* x = float_ptr(src, device_, numel_, "LRN backward src");
        const float* dy = float_ptr(diff_dst, device_, numel_, "LRN backward diff_dst");
        float* dx = float_ptr(diff_src, device_, numel_, "LRN backward diff_src");
        const auto* scale = static_cast<const float*>(device_ptr(
            workspace, device_, DType::u8, std::int64_t(workspace_bytes()), "LRN backward workspace"));
        device_.activate();
        kernels::lrn_backward(shape_, x, dy, scale, dx, device_.compute_stream());
        check_launch("lrn_backward");
    }

private:
    CudaDevice& device_;
    std::int64_t numel_;
    lrn::Shape shape_;
};

}  // namespace

std::unique_ptr<LrnKernel> make_lrn_cuda(Device& device, const LrnConfig& config) {
    if (lrn_unsupported(config)) return std::make_unique<LrnCuda>(device, config);
    return std::make_unique<LrnCudnn>(device, config);
}

}  // namespace tandem::cuda

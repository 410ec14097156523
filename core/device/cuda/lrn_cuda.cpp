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

// What both kernels share: one float of workspace per element, and the operands' checks.
class LrnOnGpu : public LrnKernel {
public:
    std::size_t workspace_bytes() const override { return std::size_t(numel_) * sizeof(float); }

protected:
    LrnOnGpu(Device& device, const LrnConfig& c)
        : device_(as_cuda(device)), numel_(c.n * c.c * c.h * c.w) {}

    struct Forward {
        const float* x;
        float* y;
        float* saved;  // null in evaluation (no workspace): no backward follows
    };
    Forward forward_operands(const Tensor& src, Tensor& dst, Tensor& workspace) {
        return {float_ptr(src, device_, numel_, "LRN forward src"),
                float_ptr(dst, device_, numel_, "LRN forward dst"),
                workspace.defined() ? saved(workspace, "LRN forward workspace") : nullptr};
    }

    struct Backward {
        const float* x;
        const float* dy;
        const float* saved;
        float* dx;
    };
    Backward backward_operands(const Tensor& src, const Tensor& diff_dst, const Tensor& workspace,
                               Tensor& diff_src) {
        TANDEM_CHECK(workspace.defined())
            << "LRN backward needs the workspace of a training forward";
        return {float_ptr(src, device_, numel_, "LRN backward src"),
                float_ptr(diff_dst, device_, numel_, "LRN backward diff_dst"),
                saved(workspace, "LRN backward workspace"),
                float_ptr(diff_src, device_, numel_, "LRN backward diff_src")};
    }

    CudaDevice& device_;
    const std::int64_t numel_;

private:
    float* saved(const Tensor& workspace, const char* what) {
        return static_cast<float*>(
            device_ptr(workspace, device_, DType::u8, std::int64_t(workspace_bytes()), what));
    }
};

class LrnCudnn final : public LrnOnGpu {
public:
    LrnCudnn(Device& device, const LrnConfig& c)
        : LrnOnGpu(device, c), x_(dims4(c.n, c.c, c.h, c.w, c.layout, "LRN src")) {
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

    void forward(const Tensor& src, Tensor& dst, Tensor& workspace) override {
        const Forward o = forward_operands(src, dst, workspace);
        device_.activate();
        TANDEM_CUDNN_CALL(cudnnLRNCrossChannelForward(device_.cudnn(), lrn_,
                                                      CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne, x_.get(),
                                                      o.x, &kZero, x_.get(), o.y));
        if (!o.saved) return;
        TANDEM_CUDA_CALL(cudaMemcpyAsync(o.saved, o.y, workspace_bytes(), cudaMemcpyDeviceToDevice,
                                         device_.compute_stream()));
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& workspace,
                  Tensor& diff_src) override {
        const Backward o = backward_operands(src, diff_dst, workspace, diff_src);
        device_.activate();
        TANDEM_CUDNN_CALL(cudnnLRNCrossChannelBackward(
            device_.cudnn(), lrn_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne, x_.get(), o.saved, x_.get(),
            o.dy, x_.get(), o.x, &kZero, x_.get(), o.dx));
    }

private:
    TensorDesc x_;
    cudnnLRNDescriptor_t lrn_ = nullptr;
};

class LrnCuda final : public LrnOnGpu {
public:
    LrnCuda(Device& device, const LrnConfig& c)
        : LrnOnGpu(device, c), shape_{c.n,    c.c,     c.h * c.w, c.layout == Layout::channels_last,
                                      c.size, c.alpha, c.beta,    c.k} {
        TANDEM_CHECK_AS(ConfigError, c.size >= 1)
            << "LRN on " << device.name() << ": the window must hold at least one channel, not "
            << c.size;
    }

    void forward(const Tensor& src, Tensor& dst, Tensor& workspace) override {
        const Forward o = forward_operands(src, dst, workspace);
        device_.activate();
        kernels::lrn_forward(shape_, o.x, o.y, o.saved, device_.compute_stream());
        check_launch("lrn_forward");
    }

    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& workspace,
                  Tensor& diff_src) override {
        const Backward o = backward_operands(src, diff_dst, workspace, diff_src);
        device_.activate();
        kernels::lrn_backward(shape_, o.x, o.dy, o.saved, o.dx, device_.compute_stream());
        check_launch("lrn_backward");
    }

private:
    lrn::Shape shape_;
};

}  // namespace

std::unique_ptr<LrnKernel> make_lrn_cuda(Device& device, const LrnConfig& config) {
    if (lrn_unsupported(config)) return std::make_unique<LrnCuda>(device, config);
    return std::make_unique<LrnCudnn>(device, config);
}

}  // namespace tandem::cuda

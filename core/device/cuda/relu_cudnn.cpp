// ReLU on cuDNN's activation functions. Element-wise, so any shape is one flat 1x1x1xN tensor
// (storage order is the same in src and dst whatever the layout). Backward gets only forward's
// output: for ReLU y > 0 exactly where x > 0, so y is passed as cuDNN's x too.
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

class ReluCudnn final : public ReluKernel {
public:
    ReluCudnn(Device& device, const ReluConfig& c)
        : device_(as_cuda(device)),
          numel_(c.shape.numel()),
          desc_(dims4(1, 1, 1, numel_, Layout::contiguous, "ReLU")) {
        TANDEM_CUDNN_CALL(cudnnCreateActivationDescriptor(&act_));
        try {
            TANDEM_CUDNN_CALL(
                cudnnSetActivationDescriptor(act_, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
        } catch (...) {
            cudnnDestroyActivationDescriptor(act_);
            throw;
        }
    }
    ~ReluCudnn() override { cudnnDestroyActivationDescriptor(act_); }

    void forward(const Tensor& src, Tensor& dst) override {
        const void* x = float_ptr(src, device_, numel_, "ReLU forward src");
        void* y = float_ptr(dst, device_, numel_, "ReLU forward dst");
        device_.activate();
        TANDEM_CUDNN_CALL(cudnnActivationForward(device_.cudnn(), act_, &kOne, desc_.get(), x,
                                                 &kZero, desc_.get(), y));
    }

    void backward(const Tensor& dst, const Tensor& diff_dst, Tensor& diff_src) override {
        const void* y = float_ptr(dst, device_, numel_, "ReLU backward dst");
        const void* dy = float_ptr(diff_dst, device_, numel_, "ReLU backward diff_dst");
        void* dx = float_ptr(diff_src, device_, numel_, "ReLU backward diff_src");
        device_.activate();
        TANDEM_CUDNN_CALL(cudnnActivationBackward(device_.cudnn(), act_, &kOne, desc_.get(), y,
                                                  desc_.get(), dy, desc_.get(), y, &kZero,
                                                  desc_.get(), dx));
    }

private:
    CudaDevice& device_;
    std::int64_t numel_;
    TensorDesc desc_;
    cudnnActivationDescriptor_t act_ = nullptr;
};

}  // namespace

std::unique_ptr<ReluKernel> make_relu_cudnn(Device& device, const ReluConfig& config) {
    return std::make_unique<ReluCudnn>(device, config);
}

}  // namespace tandem::cuda

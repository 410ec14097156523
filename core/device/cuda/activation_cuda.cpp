// Element-wise activations on the GPU: cuDNN's activation functions for ReLU, sigmoid and tanh,
// our kernel (kernels.cu, on activation_math.h's definitions) for leaky ReLU and GELU, which
// cuDNN does not offer. Element-wise, so any shape is one flat run of numel floats (storage
// order is the same in src and dst whatever the layout).
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

// Labels for float_ptr's messages: "GELU forward src".
struct Labels {
    explicit Labels(ActivationAlgorithm a) : name(activation_name(a)) {}
    std::string of(const char* what) const { return name + " " + what; }
    std::string name;
};

// ReLU, sigmoid and tanh, whose backward cuDNN computes from forward's output y alone (for
// ReLU, y > 0 exactly where x > 0), so y is passed as cuDNN's x too.
class ActivationCudnn final : public ActivationKernel {
public:
    ActivationCudnn(Device& device, const ActivationConfig& c, cudnnActivationMode_t mode)
        : device_(as_cuda(device)), numel_(c.shape.numel()), labels_(c.algorithm),
          desc_(dims4(1, 1, 1, numel_, Layout::contiguous, labels_.name)) {
        TANDEM_CUDNN_CALL(cudnnCreateActivationDescriptor(&act_));
        try {
            TANDEM_CUDNN_CALL(cudnnSetActivationDescriptor(act_, mode, CUDNN_PROPAGATE_NAN, 0.0));
        } catch (...) {
            cudnnDestroyActivationDescriptor(act_);
            throw;
        }
    }
    ~ActivationCudnn() override { cudnnDestroyActivationDescriptor(act_); }

    void forward(const Tensor& src, Tensor& dst) override {
        const void* x = float_ptr(src, device_, numel_, labels_.of("forward src"));
        void* y = float_ptr(dst, device_, numel_, labels_.of("forward dst"));
        device_.activate();
        TANDEM_CUDNN_CALL(cudnnActivationForward(device_.cudnn(), act_, &kOne, desc_.get(), x,
                                                 &kZero, desc_.get(), y));
    }

    void backward(const Tensor& dst, const Tensor& diff_dst, Tensor& diff_src) override {
        const void* y = float_ptr(dst, device_, numel_, labels_.of("backward dst"));
        const void* dy = float_ptr(diff_dst, device_, numel_, labels_.of("backward diff_dst"));
        void* dx = float_ptr(diff_src, device_, numel_, labels_.of("backward diff_src"));
        device_.activate();
        TANDEM_CUDNN_CALL(cudnnActivationBackward(device_.cudnn(), act_, &kOne, desc_.get(), y,
                                                  desc_.get(), dy, desc_.get(), y, &kZero,
                                                  desc_.get(), dx));
    }

private:
    CudaDevice& device_;
    std::int64_t numel_;
    Labels labels_;
    TensorDesc desc_;
    cudnnActivationDescriptor_t act_ = nullptr;
};

// Leaky ReLU and GELU on our kernel; backward takes the input.
class ActivationOwnKernel final : public ActivationKernel {
public:
    ActivationOwnKernel(Device& device, const ActivationConfig& c)
        : device_(as_cuda(device)), config_(c), labels_(c.algorithm) {}

    void forward(const Tensor& src, Tensor& dst) override {
        const std::int64_t n = config_.shape.numel();
        const float* x = float_ptr(src, device_, n, labels_.of("forward src"));
        float* y = float_ptr(dst, device_, n, labels_.of("forward dst"));
        device_.activate();
        kernels::activation_forward(config_.algorithm, config_.alpha, x, y, n,
                                    device_.compute_stream());
        check_launch("activation_forward");
    }

    void backward(const Tensor& src, const Tensor& diff_dst, Tensor& diff_src) override {
        const std::int64_t n = config_.shape.numel();
        const float* x = float_ptr(src, device_, n, labels_.of("backward src"));
        const float* dy = float_ptr(diff_dst, device_, n, labels_.of("backward diff_dst"));
        float* dx = float_ptr(diff_src, device_, n, labels_.of("backward diff_src"));
        device_.activate();
        kernels::activation_backward(config_.algorithm, config_.alpha, x, dy, dx, n,
                                     device_.compute_stream());
        check_launch("activation_backward");
    }

private:
    CudaDevice& device_;
    ActivationConfig config_;
    Labels labels_;
};

}  // namespace

std::unique_ptr<ActivationKernel> make_activation_cuda(Device& device,
                                                       const ActivationConfig& config) {
    switch (config.algorithm) {
        case ActivationAlgorithm::relu:
            return std::make_unique<ActivationCudnn>(device, config, CUDNN_ACTIVATION_RELU);
        case ActivationAlgorithm::sigmoid:
            return std::make_unique<ActivationCudnn>(device, config, CUDNN_ACTIVATION_SIGMOID);
        case ActivationAlgorithm::tanh:
            return std::make_unique<ActivationCudnn>(device, config, CUDNN_ACTIVATION_TANH);
        case ActivationAlgorithm::leaky_relu:
        case ActivationAlgorithm::gelu_erf:
        case ActivationAlgorithm::gelu_tanh: break;
    }
    return std::make_unique<ActivationOwnKernel>(device, config);
}

}  // namespace tandem::cuda

// Softmax + cross-entropy: cuDNN's log-softmax (CUDNN_SOFTMAX_LOG, one instance per sample),
// then our kernel for probabilities, per-sample losses and arg-max hits. The per-sample values
// come back to the host and are summed there in double (forward returns them anyway, so it
// synchronises); a label outside [0, classes) becomes the CPU backend's DataError.
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"
#include "device/cuda/loss_sums.h"

namespace tandem::cuda {
namespace {

class SoftmaxCrossEntropyCudnn final : public SoftmaxCrossEntropyKernel {
public:
    SoftmaxCrossEntropyCudnn(Device& device, const SoftmaxCrossEntropyConfig& c)
        : device_(as_cuda(device)), config_(c),
          desc_(dims4(c.n, c.classes, 1, 1, Layout::contiguous, "SoftmaxCrossEntropy logits")) {}

    LossSums forward(const Tensor& logits, const Tensor& labels, float smoothing,
                     Tensor& probabilities) override {
        const auto& c = config_;
        const float* x = float_ptr(logits, device_, c.n * c.classes, "SoftmaxCrossEntropy logits");
        float* prob =
            float_ptr(probabilities, device_, c.n * c.classes, "SoftmaxCrossEntropy probabilities");
        const Tensor y = on_device(labels);
        const int* label = static_cast<const int*>(y.raw());
        device_.activate();
        const cudaStream_t s = device_.compute_stream();
        Tensor log_p = Tensor::empty({c.n, c.classes}, device_);
        TANDEM_CUDNN_CALL(cudnnSoftmaxForward(device_.cudnn(), CUDNN_SOFTMAX_LOG,
                                              CUDNN_SOFTMAX_MODE_INSTANCE, &kOne, desc_.get(), x,
                                              &kZero, desc_.get(), log_p.raw()));
        Tensor loss = Tensor::empty({c.n * 2}, device_);  // n doubles
        Tensor correct = Tensor::empty({c.n}, device_, DType::i32);
        Tensor bad = Tensor::empty({1}, device_, DType::i32);
        const int none = static_cast<int>(c.n);
        TANDEM_CUDA_CALL(cudaMemcpyAsync(bad.raw(), &none, sizeof(int), cudaMemcpyHostToDevice, s));
        kernels::cross_entropy_forward(x, static_cast<const float*>(log_p.raw()), label, prob,
                                       static_cast<double*>(loss.raw()),
                                       static_cast<int*>(correct.raw()),
                                       static_cast<int*>(bad.raw()), c.n, c.classes, smoothing, s);
        check_launch("cross_entropy_forward");

        int first_bad = 0;
        device_.copy_to_host(&first_bad, bad.raw(), sizeof(int));  // synchronises the stream
        if (first_bad < c.n) {
            int value = 0;
            device_.copy_to_host(&value, label + first_bad, sizeof(int));
            TANDEM_THROW(DataError) << "label " << value << " of sample " << first_bad + 1
                                    << " is outside [0, " << c.classes << ")";
        }
        return sum_per_sample(device_, loss, correct, c.n, true);
    }

    void backward(const Tensor& probabilities, const Tensor& labels, float smoothing, float scale,
                  Tensor& diff_logits) override {
        const auto& c = config_;
        const float* prob =
            float_ptr(probabilities, device_, c.n * c.classes, "SoftmaxCrossEntropy probabilities");
        float* dx =
            float_ptr(diff_logits, device_, c.n * c.classes, "SoftmaxCrossEntropy diff_logits");
        const Tensor y = on_device(labels);
        device_.activate();
        kernels::cross_entropy_backward(prob, static_cast<const int*>(y.raw()), dx, c.n, c.classes,
                                        smoothing, scale, device_.compute_stream());
        check_launch("cross_entropy_backward");
    }

private:
    // The labels on this device (copied there when they are elsewhere, e.g. on the host).
    Tensor on_device(const Tensor& labels) const {
        TANDEM_CHECK_AS(ShapeError, labels.defined() && labels.numel() == config_.n &&
                                        labels.dtype() == DType::i32)
            << "SoftmaxCrossEntropy: labels " << labels.description() << " must be " << config_.n
            << " i32 values";
        return &labels.device() == &device_ ? labels : labels.to(device_);
    }

    CudaDevice& device_;
    SoftmaxCrossEntropyConfig config_;
    TensorDesc desc_;
};

}  // namespace

std::unique_ptr<SoftmaxCrossEntropyKernel> make_softmax_cross_entropy_cudnn(
    Device& device, const SoftmaxCrossEntropyConfig& config) {
    return std::make_unique<SoftmaxCrossEntropyCudnn>(device, config);
}

}  // namespace tandem::cuda

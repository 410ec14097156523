// MSE and BCEWithLogits on a GPU: our kernels (kernels.cu) for the per-sample losses and the
// gradient; the per-sample values are summed on the host (loss_sums.h).
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"
#include "device/cuda/loss_sums.h"

namespace tandem::cuda {
namespace {

class ElementLossCuda final : public ElementLossKernel {
public:
    ElementLossCuda(Device& device, const ElementLossConfig& c)
        : device_(as_cuda(device)), config_(c) {}

    LossSums forward(const Tensor& output, const Tensor& targets) override {
        const auto& c = config_;
        const std::int64_t total = c.n * c.elements;
        const float* y = float_ptr(output, device_, total, "ElementLoss output");
        const float* t = float_ptr(targets, device_, total, "ElementLoss targets");
        device_.activate();
        Tensor loss = Tensor::empty({c.n * 2}, device_);  // n doubles
        Tensor correct = Tensor::empty({c.n}, device_, DType::i32);
        kernels::element_loss_forward(y, t, static_cast<double*>(loss.raw()),
                                      static_cast<int*>(correct.raw()), c.n, c.elements, bce(),
                                      device_.compute_stream());
        check_launch("element_loss_forward");
        return sum_per_sample(device_, loss, correct, c.n, bce());
    }

    void backward(const Tensor& output, const Tensor& targets, float scale, Tensor& diff) override {
        const auto& c = config_;
        const std::int64_t total = c.n * c.elements;
        const float* y = float_ptr(output, device_, total, "ElementLoss output");
        const float* t = float_ptr(targets, device_, total, "ElementLoss targets");
        float* d = float_ptr(diff, device_, total, "ElementLoss diff");
        device_.activate();
        kernels::element_loss_backward(y, t, d, c.n, c.elements, bce(), scale,
                                       device_.compute_stream());
        check_launch("element_loss_backward");
    }

private:
    bool bce() const { return config_.kind == ElementLossKind::bce_with_logits; }

    CudaDevice& device_;
    ElementLossConfig config_;
};

}  // namespace

std::unique_ptr<ElementLossKernel> make_element_loss_cuda(Device& device,
                                                          const ElementLossConfig& config) {
    return std::make_unique<ElementLossCuda>(device, config);
}

}  // namespace tandem::cuda

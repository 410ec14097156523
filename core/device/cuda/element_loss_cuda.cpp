// MSE and BCEWithLogits on a GPU: our kernels (kernels.cu) for the per-sample losses and the
// gradient. The per-sample values come back to the host and are summed there in double, as
// the cross-entropy's are (forward returns them anyway, so it synchronises).
#include <vector>

#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

class ElementLossCuda final : public ElementLossKernel {
public:
    ElementLossCuda(Device& device, const ElementLossConfig& c) : device_(as_cuda(device)), config_(c) {}

    LossSums forward(const Tensor& output, const Tensor& targets) override {
        const auto& c = config_;
        const std::int64_t total = c.n * c.elements;
        const float* y = float_ptr(output, device_, total, "ElementLoss output");
        const float* t = float_ptr(targets, device_, total, "ElementLoss targets");
        device_.activate();
        Tensor loss = Tensor::empty({c.n * 2}, device_);  // n doubles
        Tensor correct = Tensor::empty({c.n}, device_, DType::i32);
        kernels::element_loss_forward(y, t, static_cast<double*>(loss.raw()), static_cast<int*>(correct.raw()), c.n,
                                      c.elements, bce(), device_.compute_stream());
        check_launch("element_loss_forward");
        std::vector<double> losses(static_cast<std::size_t>(c.n));
        std::vector<int> hits(static_cast<std::size_t>(c.n));
        device_.copy_to_host(losses.data(), loss.raw(), losses.size() * sizeof(double));
        device_.copy_to_host(hits.data(), correct.raw(), hits.size() * sizeof(int));
        LossSums sums{0, 0, c.n};
        for (std::size_t i = 0; i < losses.size(); ++i) {
            sums.loss += losses[i];
            if (bce()) sums.correct += hits[i];
        }
        return sums;
    }

    void backward(const Tensor& output, const Tensor& targets, float scale, Tensor& diff) override {
        const auto& c = config_;
        const std::int64_t total = c.n * c.elements;
        const float* y = float_ptr(output, device_, total, "ElementLoss output");
        const float* t = float_ptr(targets, device_, total, "ElementLoss targets");
        float* d = float_ptr(diff, device_, total, "ElementLoss diff");
        device_.activate();
        kernels::element_loss_backward(y, t, d, c.n, c.elements, bce(), scale, device_.compute_stream());
        check_launch("element_loss_backward");
    }

private:
    bool bce() const { return config_.kind == ElementLossKind::bce_with_logits; }

    CudaDevice& device_;
    ElementLossConfig config_;
};

}  // namespace

std::unique_ptr<ElementLossKernel> make_element_loss_cuda(Device& device, const ElementLossConfig& config) {
    return std::make_unique<ElementLossCuda>(device, config);
}

}  // namespace tandem::cuda

// Dropout on our kernel, drawing the CPU backend's mask: the same counter-based generator
// (base/rng.h, compiled for the device) at the same logical (NCHW) index, so a CPU and a GPU
// run of the same step drop the same elements.
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

class DropoutCuda final : public DropoutKernel {
public:
    DropoutCuda(Device& device, const DropoutConfig& c) : device_(as_cuda(device)), config_(c) {}

    void forward(const Tensor& src, float p, std::uint64_t key, std::uint64_t first, Tensor& mask,
                 Tensor& dst) override {
        const std::int64_t n = config_.numel;
        const float* x = float_ptr(src, device_, n, "Dropout forward src");
        float* y = float_ptr(dst, device_, n, "Dropout forward dst");
        auto* m = static_cast<unsigned char*>(
            device_ptr(mask, device_, DType::u8, n, "Dropout forward mask"));
        TANDEM_CHECK_AS(ShapeError, mask.layout() == src.layout() && dst.layout() == src.layout())
            << "Dropout: mask " << mask.description() << " and dst " << dst.description()
            << " must be in the layout of src " << src.description();
        const bool nhwc = src.layout() == Layout::channels_last;
        const Shape& s = src.shape();
        device_.activate();
        kernels::dropout_forward(x, y, m, n, p, key, first, nhwc, nhwc ? s[1] : 1, nhwc ? s[2] : 1,
                                 nhwc ? s[3] : 1, device_.compute_stream());
        check_launch("dropout_forward");
    }

    void backward(const Tensor& diff_dst, const Tensor& mask, float p, Tensor& diff_src) override {
        const std::int64_t n = config_.numel;
        const float* dy = float_ptr(diff_dst, device_, n, "Dropout backward diff_dst");
        float* dx = float_ptr(diff_src, device_, n, "Dropout backward diff_src");
        const auto* m = static_cast<const unsigned char*>(
            device_ptr(mask, device_, DType::u8, n, "Dropout backward mask"));
        TANDEM_CHECK_AS(ShapeError, mask.layout() == diff_dst.layout() &&
                                        diff_src.layout() == diff_dst.layout())
            << "Dropout: mask " << mask.description() << " and diff_src " << diff_src.description()
            << " must be in the layout of diff_dst " << diff_dst.description();
        device_.activate();
        kernels::dropout_backward(dy, m, dx, n, p, device_.compute_stream());
        check_launch("dropout_backward");
    }

private:
    CudaDevice& device_;
    DropoutConfig config_;
};

}  // namespace

std::unique_ptr<DropoutKernel> make_dropout_cuda(Device& device, const DropoutConfig& config) {
    return std::make_unique<DropoutCuda>(device, config);
}

}  // namespace tandem::cuda

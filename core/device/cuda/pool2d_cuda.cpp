// Max and average pooling on our own kernels (pool2d.cu), with the reference kernel's rules
// and argmax (an int32 h * W + w per output, in the output's storage order): cudnnPoolingBackward
// needs the layer's input and output, which the Pool2dKernel contract does not give backward,
// and cuDNN has no asymmetric padding for ceil_mode.
#include "device/cuda/check.h"
#include "device/cuda/cudnn_desc.h"
#include "device/cuda/kernels.cuh"
#include "device/cuda/kernels_cuda.h"

namespace tandem::cuda {
namespace {

class Pool2dCuda final : public Pool2dKernel {
public:
    Pool2dCuda(Device& device, const Pool2dConfig& c) : device_(as_cuda(device)) {
        shape_ = kernels::PoolShape{c.n,
                                    c.c,
                                    c.h,
                                    c.w,
                                    c.out_h(),
                                    c.out_w(),
                                    c.kernel_h,
                                    c.kernel_w,
                                    c.stride_h,
                                    c.stride_w,
                                    c.pad_h,
                                    c.pad_w,
                                    c.kind == PoolKind::max,
                                    c.count_include_pad,
                                    c.layout == Layout::channels_last};
        // Argmax indices are int32 h * W + w.
        checked_int(c.h * c.w, "Pool2d input plane");
        in_ = c.n * c.c * c.h * c.w;
        out_ = c.n * c.c * shape_.out_h * shape_.out_w;
    }

    std::size_t workspace_bytes() const override {
        return shape_.max ? std::size_t(out_) * sizeof(std::int32_t) : 0;
    }

    void forward(const Tensor& src, Tensor& dst, Tensor& workspace) override {
        const float* x = float_ptr(src, device_, in_, "Pool2d forward src");
        float* y = float_ptr(dst, device_, out_, "Pool2d forward dst");
        std::int32_t* arg = nullptr;
        if (shape_.max && workspace.defined())
            arg = static_cast<std::int32_t*>(device_ptr(workspace, device_, DType::u8,
                                                        std::int64_t(workspace_bytes()),
                                                        "Pool2d forward workspace"));
        device_.activate();
        kernels::pool_forward(shape_, x, y, arg, device_.compute_stream());
        check_launch("pool_forward");
    }

    void backward(const Tensor& diff_dst, const Tensor& workspace, Tensor& diff_src) override {
        const float* dy = float_ptr(diff_dst, device_, out_, "Pool2d backward diff_dst");
        float* dx = float_ptr(diff_src, device_, in_, "Pool2d backward diff_src");
        const std::int32_t* arg = nullptr;
        if (shape_.max) {
            TANDEM_CHECK(workspace.defined())
                << "max pooling backward needs the workspace of a training forward";
            arg = static_cast<const std::int32_t*>(device_ptr(workspace, device_, DType::u8,
                                                              std::int64_t(workspace_bytes()),
                                                              "Pool2d backward workspace"));
        }
        device_.activate();
        kernels::pool_backward(shape_, dy, arg, dx, device_.compute_stream());
        check_launch("pool_backward");
    }

private:
    CudaDevice& device_;
    kernels::PoolShape shape_{};
    std::int64_t in_ = 0, out_ = 0;
};

}  // namespace

std::unique_ptr<Pool2dKernel> make_pool2d_cuda(Device& device, const Pool2dConfig& config) {
    return std::make_unique<Pool2dCuda>(device, config);
}

}  // namespace tandem::cuda

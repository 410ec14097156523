#include "device/cuda/cudnn_desc.h"

#include "base/error.h"
#include "device/cuda/check.h"

namespace tandem::cuda {

TensorDesc::TensorDesc(const Dims4& d, cudnnDataType_t type) {
    TANDEM_CUDNN_CALL(cudnnCreateTensorDescriptor(&desc_));
    try {
        TANDEM_CUDNN_CALL(cudnnSetTensor4dDescriptorEx(desc_, type, d.n, d.c, d.h, d.w, d.stride_n,
                                                       d.stride_c, d.stride_h, d.stride_w));
    } catch (...) {
        cudnnDestroyTensorDescriptor(desc_);
        throw;
    }
}

TensorDesc::~TensorDesc() {
    cudnnDestroyTensorDescriptor(desc_);
}

FilterDesc::FilterDesc(int k, int c, int h, int w, cudnnTensorFormat_t format,
                       cudnnDataType_t type) {
    TANDEM_CUDNN_CALL(cudnnCreateFilterDescriptor(&desc_));
    try {
        TANDEM_CUDNN_CALL(cudnnSetFilter4dDescriptor(desc_, type, format, k, c, h, w));
    } catch (...) {
        cudnnDestroyFilterDescriptor(desc_);
        throw;
    }
}

FilterDesc::~FilterDesc() {
    cudnnDestroyFilterDescriptor(desc_);
}

ConvDesc::ConvDesc(const Conv2dConfig& c, cudnnMathType_t math) {
    TANDEM_CUDNN_CALL(cudnnCreateConvolutionDescriptor(&desc_));
    try {
        // Cross-correlation (what every framework calls convolution), FP32 accumulation (the
        // compute type, whatever the operands' type).
        TANDEM_CUDNN_CALL(cudnnSetConvolution2dDescriptor(
            desc_, checked_int(c.pad_h, "Conv2d pad"), checked_int(c.pad_w, "Conv2d pad"),
            checked_int(c.stride_h, "Conv2d stride"), checked_int(c.stride_w, "Conv2d stride"), 1,
            1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        TANDEM_CUDNN_CALL(cudnnSetConvolutionGroupCount(desc_, checked_int(c.groups, "groups")));
        TANDEM_CUDNN_CALL(cudnnSetConvolutionMathType(desc_, math));
    } catch (...) {
        cudnnDestroyConvolutionDescriptor(desc_);
        throw;
    }
}

ConvDesc::~ConvDesc() {
    cudnnDestroyConvolutionDescriptor(desc_);
}

void* device_ptr(const Tensor& t, const CudaDevice& device, DType dtype, std::int64_t numel,
                 std::string_view what) {
    TANDEM_CHECK_AS(ShapeError, t.defined()) << what << ": the tensor is undefined";
    TANDEM_CHECK_AS(BackendError, &t.device() == &device)
        << what << ": " << t.description() << " is not on " << device.name();
    TANDEM_CHECK_AS(ShapeError, t.dtype() == dtype && (numel < 0 || t.numel() == numel))
        << what << ": " << t.description() << " does not fit a kernel built for " << numel
        << " elements of " << dtype_name(dtype);
    return t.raw();
}

}  // namespace tandem::cuda

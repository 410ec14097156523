#include "layers/kernels.h"


#include "device/registry.h"
#include "layers/kernel_cache.h"

namespace tandem {
namespace {

std::int64_t pooled_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                         std::int64_t pad, bool ceil_mode) {
    std::int64_t out = (in + 2 * pad - kernel + (ceil_mode ? stride - 1 : 0)) / stride + 1;
    // PyTorch's rule: the last window must start inside the input or the left padding.
    if (ceil_mode && (out - 1) * stride >= in + pad) --out;
    return out;
}

}  // namespace

std::int64_t Pool2dConfig::out_h() const {
    return pooled_size(h, kernel_h, stride_h, pad_h, ceil_mode);
}

std::int64_t Pool2dConfig::out_w() const {
    return pooled_size(w, kernel_w, stride_w, pad_w, ceil_mode);
}

TensorOpsKernel& tensor_ops(Device& device) {
    return device.attachment<TensorOpsKernel>([&device] {
        return KernelRegistry::instance().make<TensorOpsKernel>(device, TensorOpsConfig{});
    });
}

}  // namespace tandem

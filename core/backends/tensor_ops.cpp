// The device's element-wise operations (declared in kernels/kernel_cache.h). Defined here,
// above the backends, because they build the kernel through KernelRegistry::instance(), which
// only this library can make (kernel_registry.cpp).
#include "kernels/kernel_cache.h"
#include "kernels/registry.h"

namespace tandem {

TensorOpsKernel& tensor_ops(Device& device) {
    return device.attachment<TensorOpsKernel>([&device] {
        return KernelRegistry::instance().make<TensorOpsKernel>(device, TensorOpsConfig{});
    });
}

Tensor in_layout(const Tensor& t, Layout layout, Device& device) {
    if (t.layout() == layout) return t;
    Tensor out = Tensor::empty(t.shape(), device, t.dtype(), layout);
    tensor_ops(device).copy(t, out);
    return out;
}

}  // namespace tandem

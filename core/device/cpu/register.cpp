// The CPU backend's menu: every kernel it offers, fastest first (the first is the default).
#include "device/cpu/kernels_cpu.h"
#include "device/registry.h"

namespace tandem {

void register_cpu_kernels(KernelRegistry& r) {
    using namespace cpu;
    constexpr auto kCpu = DeviceKind::cpu;
    r.add<TensorOpsKernel>(kCpu, "cpu", make_tensor_ops_cpu);

    r.add<ReluKernel>(kCpu, "dnnl", make_relu_dnnl);
    r.add<ReluKernel>(kCpu, "reference", make_relu_reference);

    r.add<Conv2dKernel>(kCpu, "dnnl", make_conv2d_dnnl);
    r.add<Conv2dKernel>(kCpu, "reference", make_conv2d_reference);

    r.add<LinearKernel>(kCpu, "dnnl", make_linear_dnnl);
    r.add<LinearKernel>(kCpu, "reference", make_linear_reference);
}

}  // namespace tandem

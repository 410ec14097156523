// The CPU's Conv2d (`cpu`, the device's default): the first of its implementations that the
// measurements beside each rule found faster than oneDNN's direct kernels for the shape, or
// oneDNN's. The shape alone chooses, never a timing, so a run and its resume choose alike.
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {

std::unique_ptr<Conv2dKernel> make_conv2d_cpu(Device& device, const Conv2dConfig& config) {
    if (winograd_pays(config)) return make_conv2d_winograd(device, config);
    if (thin_input_fits(config)) return make_conv2d_thin_input(device, config);
    if (gemm_pays(config)) return make_conv2d_gemm(device, config);
    return make_conv2d_dnnl(device, config);
}

}  // namespace tandem::cpu

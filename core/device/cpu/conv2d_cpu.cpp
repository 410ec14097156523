// The CPU's Conv2d (`cpu`, the device's default): for each pass, the first of its
// implementations that the measurements beside each rule found faster than oneDNN's direct
// kernels for the shape, or oneDNN's. The passes may differ: LeNet-5's 20 -> 50 5x5 layer runs
// its forward and its weights' gradient by Winograd (on one Zen 3 core 2.6 and 2.7 ms at batch
// 64, oneDNN 2.9 and 3.9) and its input's gradient as a matrix product (about 2.3 ms, Winograd
// 6.6: the full convolution's tiles hold mostly padding). The shape alone chooses, never a
// timing, so a run and its resume choose alike.
#include <map>
#include <string_view>

#include "device/cpu/dnnl_context.h"
#include "device/cpu/kernels_cpu.h"

namespace tandem::cpu {
namespace {

// Each pass on the kernel chosen for it (kernels chosen for several passes are shared).
class Conv2dByPass final : public Conv2dKernel {
public:
    Conv2dByPass(std::shared_ptr<Conv2dKernel> forward, std::shared_ptr<Conv2dKernel> data,
                 std::shared_ptr<Conv2dKernel> weights)
        : forward_(std::move(forward)), data_(std::move(data)), weights_(std::move(weights)) {}

    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        forward_->forward(src, weights, bias, dst);
    }
    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        data_->backward_data(diff_dst, weights, diff_src);
    }
    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        weights_->backward_weights(src, diff_dst, diff_weights, diff_bias);
    }
    // One kernel for both gradients converts diff_dst once.
    void backward(const Tensor& src, const Tensor& diff_dst, const Tensor& weights,
                  Tensor& diff_src, Tensor& diff_weights, Tensor& diff_bias) override {
        if (data_ == weights_)
            return data_->backward(src, diff_dst, weights, diff_src, diff_weights, diff_bias);
        Conv2dKernel::backward(src, diff_dst, weights, diff_src, diff_weights, diff_bias);
    }

private:
    std::shared_ptr<Conv2dKernel> forward_, data_, weights_;
};

std::unique_ptr<Conv2dKernel> make_named(Device& device, const Conv2dConfig& config,
                                         std::string_view name) {
    if (name == "winograd") return make_conv2d_winograd(device, config);
    if (name == "thin_input") return make_conv2d_thin_input(device, config);
    if (name == "gemm") return make_conv2d_gemm(device, config);
    return make_conv2d_dnnl(device, config);
}

}  // namespace

Conv2dChoice choose_conv2d_cpu(const Conv2dConfig& config, int vector_floats) {
    // Only oneDNN's kernels compute in bf16.
    if (config.precision != Precision::fp32) return {"dnnl", "dnnl", "dnnl"};
    // thin_input is oneDNN's forward and backward data beside its own weights' gradient.
    if (thin_input_fits(config)) return {"thin_input", "thin_input", "thin_input"};
    const auto pick = [&](ConvPass pass) -> std::string_view {
        if (winograd_pays(config, pass, vector_floats)) return "winograd";
        if (gemm_pays(config, pass)) return "gemm";
        return "dnnl";
    };
    return {pick(ConvPass::forward), pick(ConvPass::data), pick(ConvPass::weights)};
}

std::unique_ptr<Conv2dKernel> make_conv2d_cpu(Device& device, const Conv2dConfig& config) {
    const Conv2dChoice choice = choose_conv2d_cpu(config, dnnl_vector_floats());
    if (choice.forward == choice.data && choice.data == choice.weights)
        return make_named(device, config, choice.forward);
    std::map<std::string_view, std::shared_ptr<Conv2dKernel>> made;
    const auto kernel = [&](std::string_view name) {
        auto& k = made[name];
        if (!k) k = make_named(device, config, name);
        return k;
    };
    return std::make_unique<Conv2dByPass>(kernel(choice.forward), kernel(choice.data),
                                          kernel(choice.weights));
}

}  // namespace tandem::cpu

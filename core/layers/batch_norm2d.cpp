#include "layers/batch_norm2d.h"

#include <sstream>

#include "layers/batch_statistics.h"

namespace tandem {

BatchNorm2d::BatchNorm2d(const BatchNorm2dOptions& options) : options_(options) {
    TANDEM_CHECK_AS(ConfigError, options.channels > 0)
        << "BatchNorm2d: channels must be positive, got " << options.channels;
    TANDEM_CHECK_AS(ConfigError, options.epsilon > 0)
        << "BatchNorm2d: epsilon must be positive, got " << options.epsilon;
    TANDEM_CHECK_AS(ConfigError, options.momentum >= 0 && options.momentum <= 1)
        << "BatchNorm2d: momentum must lie in [0, 1], got " << options.momentum;
    const Shape c{options.channels};
    weight_ = make_parameter("weight", c, false);
    bias_ = make_parameter("bias", c, false);
    running_mean_ = make_buffer("running_mean", c, 0.f);
    running_var_ = make_buffer("running_var", c, 1.f);
    weight_.value.fill(1.f);
}

void BatchNorm2d::initialize(std::uint64_t) {
    weight_.value.fill(1.f);
    bias_.value.fill(0.f);
    running_mean_.value.fill(0.f);
    running_var_.value.fill(1.f);
}

std::string BatchNorm2d::options_text() const {
    std::ostringstream out;
    out << options_.channels << ", eps " << options_.epsilon << ", momentum " << options_.momentum;
    return out.str();
}

Shape BatchNorm2d::output_shape(const Shape& input) const {
    TANDEM_CHECK_AS(ShapeError, input.rank() == 4 && input[1] == options_.channels)
        << label() << ": expected an input of N x " << options_.channels << " x H x W, got "
        << input.to_string();
    return input;
}

MemoryEstimate BatchNorm2d::memory_estimate(const Shape& input) const {
    MemoryEstimate e = Layer::memory_estimate(input);
    e.saved_bytes = 2 * static_cast<std::size_t>(options_.channels) * sizeof(float);
    return e;
}

BatchNormKernel& BatchNorm2d::kernel(Device& device, const Shape& s, Layout layout, bool training) {
    return kernels_.get(device,
                        BatchNormConfig{s[0], s[1], s[2], s[3], options_.epsilon, training, layout},
                        kernel_impl());
}

BatchNormReluKernel& BatchNorm2d::relu_kernel(Device& device, const Shape& s, Layout layout) {
    return relu_kernels_.get(
        device, BatchNormConfig{s[0], s[1], s[2], s[3], options_.epsilon, true, layout},
        kernel_impl());
}

void BatchNorm2d::on_bind(Device& device, const Shape& input, Layout layout) {
    kernel(device, input, layout, true);
    kernel(device, input, layout, false);
    if (KernelRegistry::instance().offers<BatchNormReluKernel>(device, kernel_impl()))
        relu_kernel(device, input, layout);
}

std::int64_t BatchNorm2d::values_per_channel(const Shape& s) const {
    const std::int64_t count = s[0] * s[2] * s[3];
    TANDEM_CHECK_AS(ShapeError, count > 1)
        << label() << ": expected more than 1 value per channel when training, got input "
        << s.to_string();
    return count;
}

void BatchNorm2d::note_batch_statistics(const Tensor& mean, const Tensor& var, std::int64_t count,
                                        Pass& pass) {
    if (pass.recomputing) {
        // Running statistics already hold this batch.
    } else if (pass.batch_statistics) {
        pass.batch_statistics->add(this, mean, var, count);
    } else {
        update_running_stats(mean, var, count);
    }
}

Tensor BatchNorm2d::forward(const Tensor& x, Pass& pass) {
    const Shape s = output_shape(x.shape());
    Tensor y = Tensor::empty(s, pass.device, DType::f32, x.layout());
    if (pass.mode == Mode::eval) {
        kernel(pass.device, s, x.layout(), false)
            .forward(x, weight_.value, bias_.value, running_mean_.value, running_var_.value, y);
        return y;
    }
    const std::int64_t count = values_per_channel(s);
    Tensor mean = Tensor::empty({s[1]}, pass.device);
    Tensor var = Tensor::empty({s[1]}, pass.device);
    kernel(pass.device, s, x.layout(), true).forward(x, weight_.value, bias_.value, mean, var, y);
    note_batch_statistics(mean, var, count, pass);
    pass.saved.put(this, {mean, var});
    return y;
}

bool BatchNorm2d::takes_relu(const Pass& pass) const {
    return pass.mode == Mode::train &&
           KernelRegistry::instance().offers<BatchNormReluKernel>(pass.device, kernel_impl());
}

Tensor BatchNorm2d::forward_relu(const Tensor& x, Pass& pass) {
    const Shape s = output_shape(x.shape());
    const std::int64_t count = values_per_channel(s);
    BatchNormReluKernel& k = relu_kernel(pass.device, s, x.layout());
    Tensor y = Tensor::empty(s, pass.device, DType::f32, x.layout());
    Tensor mean = Tensor::empty({s[1]}, pass.device);
    Tensor var = Tensor::empty({s[1]}, pass.device);
    Tensor mask =
        Tensor::empty({static_cast<std::int64_t>(k.workspace_bytes())}, pass.device, DType::u8);
    k.forward(x, weight_.value, bias_.value, mean, var, y, mask);
    note_batch_statistics(mean, var, count, pass);
    pass.saved.put(this, {mean, var, mask});
    return y;
}

Tensor BatchNorm2d::backward_relu(const Tensor& x, const Tensor& dy_in, Pass& pass) {
    const Shape s = output_shape(x.shape());
    const std::vector<Tensor>& saved = pass.saved.get(this);
    TANDEM_CHECK(saved.size() == 3)
        << label() << ": backward with the ReLU after a forward without";
    const Tensor dy = dy_in.to_layout(x.layout());
    Tensor dx = Tensor::empty(s, pass.device, DType::f32, x.layout());
    relu_kernel(pass.device, s, x.layout())
        .backward(x, dy, weight_.value, saved[0], saved[1], saved[2], dx, weight_.grad, bias_.grad);
    return dx;
}

Tensor BatchNorm2d::backward(const Tensor& x, const Tensor& dy_in, Pass& pass) {
    const Shape s = output_shape(x.shape());
    const bool training = pass.mode == Mode::train;
    // Evaluation keeps nothing: its statistics are the running ones, constant in eval mode.
    const Tensor& mean = training ? pass.saved.get(this)[0] : running_mean_.value;
    const Tensor& var = training ? pass.saved.get(this)[1] : running_var_.value;
    const Tensor dy = dy_in.to_layout(x.layout());
    Tensor dx = Tensor::empty(s, pass.device, DType::f32, x.layout());
    kernel(pass.device, s, x.layout(), training)
        .backward(x, dy, weight_.value, mean, var, dx, weight_.grad, bias_.grad);
    return dx;
}

void BatchNorm2d::update_running_stats(const Tensor& mean, const Tensor& var, std::int64_t count) {
    const Shape c{options_.channels};
    TANDEM_CHECK_AS(ShapeError, mean.shape() == c && var.shape() == c)
        << label() << ": running statistics need " << c.to_string() << " mean and variance, got "
        << mean.shape().to_string() << " and " << var.shape().to_string();
    TANDEM_CHECK_AS(ShapeError, count > 1)
        << label() << ": the unbiased variance needs more than 1 value per channel, got " << count;
    Device& device = running_mean_.value.device();
    auto& ops = tensor_ops(device);
    const float m = options_.momentum;
    // Batch variance is biased (1/n); the running estimate is unbiased (1/(n-1)), as PyTorch's.
    const float unbias = float(double(count) / double(count - 1));
    // One kernel each: on a GPU, launches are what such small updates cost.
    auto here = [&](const Tensor& t) { return &t.device() == &device ? t : t.to(device); };
    ops.blend(running_mean_.value, 1.f - m, here(mean), m);
    ops.blend(running_var_.value, 1.f - m, here(var), m * unbias);
}

}  // namespace tandem

#include "layers/cross_entropy.h"

#include <sstream>

namespace tandem {

CrossEntropy::CrossEntropy(float label_smoothing) : label_smoothing_(label_smoothing) {
    // A positive test, so that NaN is refused too.
    TANDEM_CHECK_AS(ConfigError, label_smoothing >= 0.f && label_smoothing < 1.f)
        << "CrossEntropy: label_smoothing must be in [0, 1), got " << label_smoothing;
}

std::string CrossEntropy::options_text() const {
    std::ostringstream out;
    if (label_smoothing_ != 0) out << "label_smoothing = " << label_smoothing_;
    return out.str();
}

SoftmaxCrossEntropyKernel& CrossEntropy::kernel(const Tensor& logits, const Tensor& labels,
                                                Pass& pass) {
    const Shape& s = logits.shape();
    TANDEM_CHECK_AS(ShapeError, s.rank() == 2)
        << "CrossEntropy: logits must be N x classes, got logits " << s.to_string()
        << " and labels " << labels.shape().to_string();
    TANDEM_CHECK_AS(ShapeError, labels.numel() == s[0])
        << "CrossEntropy: logits " << s.to_string() << " and labels " << labels.shape().to_string()
        << " disagree on the number of samples";
    TANDEM_CHECK_AS(DataError, logits.dtype() == DType::f32 && labels.dtype() == DType::i32)
        << "CrossEntropy: logits must be F32 and labels I32, got " << dtype_name(logits.dtype())
        << " and " << dtype_name(labels.dtype());
    return kernels_.get(pass.device, SoftmaxCrossEntropyConfig{s[0], s[1]});
}

LossSums CrossEntropy::forward(const Tensor& logits, const Tensor& labels, Pass& pass) {
    auto& k = kernel(logits, labels, pass);
    Tensor probabilities = Tensor::empty(logits.shape(), pass.device);
    const LossSums sums = k.forward(logits, labels, label_smoothing_, probabilities);
    if (pass.mode == Mode::train) pass.saved.put(this, {probabilities});
    return sums;
}

Tensor CrossEntropy::backward(const Tensor& logits, const Tensor& labels, float scale, Pass& pass) {
    auto& k = kernel(logits, labels, pass);
    Tensor probabilities;
    if (pass.saved.contains(this)) {
        probabilities = pass.saved.get(this)[0];
        pass.saved.erase(this);
    }
    if (!probabilities.defined() || probabilities.shape() != logits.shape()) {
        probabilities = Tensor::empty(logits.shape(), pass.device);
        k.forward(logits, labels, label_smoothing_, probabilities);
    }
    Tensor diff = Tensor::empty(logits.shape(), pass.device);
    k.backward(probabilities, labels, label_smoothing_, scale, diff);
    return diff;
}

}  // namespace tandem

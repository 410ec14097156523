#include "layers/loss.h"

#include "base/rng.h"
#include "layers/layer.h"

namespace tandem {

std::string Loss::description() const {
    return std::string(kind()) + "(" + options_text() + ")";
}

void Loss::check_batch_targets(const Tensor& given, std::int64_t samples) const {
    TANDEM_CHECK_AS(ShapeError, given.defined()) << "a batch needs targets (" << kind() << "'s)";
    if (targets() == Targets::class_labels) {
        TANDEM_CHECK_AS(ShapeError, given.shape().rank() == 1 && given.dtype() == DType::i32 &&
                                        given.shape()[0] == samples)
            << kind() << " takes class labels, i32 with one per image: got " << given.description()
            << " for " << samples << " images";
    } else {
        TANDEM_CHECK_AS(ShapeError, given.shape().rank() >= 1 && given.dtype() == DType::f32 &&
                                        given.shape()[0] == samples)
            << kind() << " takes f32 targets shaped as the net's output, one per image: got "
            << given.description() << " for " << samples << " images";
    }
}

Tensor Loss::example_targets(const Shape& output, std::int64_t classes, std::uint64_t seed,
                             Device& device) const {
    const std::int64_t n = output[0];
    if (targets() == Targets::class_labels) {
        const std::int64_t k = classes > 0 ? classes : output.numel() / n;
        Tensor labels = Tensor::empty({n}, host_device(), DType::i32);
        for (std::int64_t i = 0; i < n; ++i)
            labels.data<int>()[i] =
                static_cast<int>(rng_bits(seed, static_cast<std::uint64_t>(i)) % std::uint64_t(k));
        return labels.to(device);
    }
    Tensor values = Tensor::empty(output, host_device());
    for (std::int64_t i = 0; i < values.numel(); ++i)
        values.data<float>()[i] = rng_uniform(seed, static_cast<std::uint64_t>(i));
    return values.to(device);
}

}  // namespace tandem

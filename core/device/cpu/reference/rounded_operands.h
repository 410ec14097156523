// The mixed-precision oracle (device/precision.h): a float32 reference kernel fed its operands
// rounded as a fp16 or bf16 kernel reads them — the activation, the weights and the incoming
// gradient — so such a kernel and its oracle differ only in the order of their float32 sums
// (and, where a kernel writes its results in half, as cuDNN's convolutions do, in that one
// rounding). Biases stay float32, as in the kernels checked.
#pragma once

#include <memory>

#include "kernels/kernels.h"

namespace tandem::cpu {

// A copy of `t` (a float32 tensor on a host-accessible device) with every element rounded as
// a kernel computing in `precision` reads it (round_to).
Tensor rounded_to(const Tensor& t, Precision precision);

// For the kernel kinds whose operands are (src, weights, bias) forward, (diff_dst, weights)
// for the input's gradient and (src, diff_dst) for the weights': Conv2d and Linear.
template <class K>
class RoundedOperands final : public K {
public:
    RoundedOperands(std::unique_ptr<K> exact, Precision precision)
        : exact_(std::move(exact)), precision_(precision) {}

    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        exact_->forward(rounded(src), rounded(weights), bias, dst);
    }
    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        exact_->backward_data(rounded(diff_dst), rounded(weights), diff_src);
    }
    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        exact_->backward_weights(rounded(src), rounded(diff_dst), diff_weights, diff_bias);
    }

private:
    Tensor rounded(const Tensor& t) const { return rounded_to(t, precision_); }

    std::unique_ptr<K> exact_;
    Precision precision_;
};

// `exact` itself in fp32; wrapped in RoundedOperands in any other precision.
template <class K>
std::unique_ptr<K> in_precision(std::unique_ptr<K> exact, Precision precision) {
    if (precision == Precision::fp32) return exact;
    return std::make_unique<RoundedOperands<K>>(std::move(exact), precision);
}

}  // namespace tandem::cpu

// The bf16 oracle (device/precision.h): a float32 reference kernel fed its operands rounded
// as a bf16 kernel reads them — the activation, the weights and the incoming gradient — so a
// bf16 kernel and its oracle differ only in the order of their float32 sums. Biases stay
// float32, as in the kernels checked.
#pragma once

#include <memory>

#include "kernels/kernels.h"

namespace tandem::cpu {

// A copy of `t` (a float32 tensor on a host-accessible device) with every element rounded to
// the nearest bfloat16.
Tensor rounded_to_bf16(const Tensor& t);

// For the kernel kinds whose operands are (src, weights, bias) forward, (diff_dst, weights)
// for the input's gradient and (src, diff_dst) for the weights': Conv2d and Linear.
template <class K>
class RoundedOperands final : public K {
public:
    explicit RoundedOperands(std::unique_ptr<K> exact) : exact_(std::move(exact)) {}

    void forward(const Tensor& src, const Tensor& weights, const Tensor& bias,
                 Tensor& dst) override {
        exact_->forward(rounded_to_bf16(src), rounded_to_bf16(weights), bias, dst);
    }
    void backward_data(const Tensor& diff_dst, const Tensor& weights, Tensor& diff_src) override {
        exact_->backward_data(rounded_to_bf16(diff_dst), rounded_to_bf16(weights), diff_src);
    }
    void backward_weights(const Tensor& src, const Tensor& diff_dst, Tensor& diff_weights,
                          Tensor& diff_bias) override {
        exact_->backward_weights(rounded_to_bf16(src), rounded_to_bf16(diff_dst), diff_weights,
                                 diff_bias);
    }

private:
    std::unique_ptr<K> exact_;
};

// `exact` itself in fp32; wrapped in RoundedOperands in bf16.
template <class K>
std::unique_ptr<K> in_precision(std::unique_ptr<K> exact, Precision precision) {
    if (precision == Precision::fp32) return exact;
    return std::make_unique<RoundedOperands<K>>(std::move(exact));
}

}  // namespace tandem::cpu

// What convolutions and matrix products compute in: a net's precision, and what the planner's
// GPU models plan for.
//
// fp32: float32 throughout. bf16 (trained on CPUs with AVX512_BF16 or AMX and on CUDA GPUs of
// compute capability 8.0 or later) and fp16 (CUDA GPUs of 7.0 or later, with loss scaling: the
// engine's loss_scale option, on by default in fp16): their operands (the activation, the
// weights and, backward, the gradient arriving) are rounded to bfloat16 (float32's exponent,
// 8 bits of mantissa) or IEEE half (5 bits of exponent, 11 of mantissa), the products summed in
// float32 and the results written in float32, as PyTorch's autocast computes them (cuDNN's
// convolutions write half and round their results once more). Everything else stays float32:
// the weights the optimizer updates (the master copy), the other layers' math, the activations
// between layers and the checkpoints, so a run may resume in the other precision. bfloat16
// keeps float32's range: no loss scaling; half's largest value is 65504, and gradients smaller
// than 2^-24 vanish in it, which is what loss scaling is for. tf32 (TF32 tensor cores: the CUDA
// device's `tf32` option, not a precision the layers take) is what the planner's GPU models
// price beside the other three.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "base/enum_names.h"

namespace tandem {

enum class Precision { fp32, tf32, fp16, bf16 };

inline constexpr std::array<EnumName<Precision>, 4> kPrecisionNames{{
    {Precision::fp32, "fp32"},
    {Precision::tf32, "tf32"},
    {Precision::fp16, "fp16"},
    {Precision::bf16, "bf16"},
}};

inline std::string_view precision_name(Precision p) {
    return enum_name(kPrecisionNames, p);
}

// The precision named `text`, else ConfigError listing the known names.
inline Precision parse_precision(std::string_view text) {
    return parse_enum(kPrecisionNames, text, "unknown precision");
}

// `x` rounded to the nearest bfloat16 (ties to even), as a float: what a bf16 kernel reads
// for `x`. NaN and infinities pass through. Inline, so loops over it vectorise.
inline float round_to_bf16(float x) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u) return x;  // infinity or NaN
    // Adding half of the dropped part's unit, less one when the kept part is even, rounds to
    // nearest with ties to even; a carry into the exponent is the right result too.
    bits += 0x7fffu + ((bits >> 16) & 1u);
    bits &= 0xffff0000u;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

// `x` rounded to the nearest IEEE half (ties to even), as a float: what a fp16 kernel reads for
// `x`. Half keeps 11 bits of mantissa down to 2^-14 and steps of 2^-24 below (its subnormals);
// from 65520 (65504, its largest value, plus half a step) on, the nearest half is infinity.
// NaN and infinities pass through. Inline, so loops over it vectorise.
inline float round_to_fp16(float x) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    const std::uint32_t sign = bits & 0x80000000u;
    std::uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude >= 0x7f800000u) return x;  // infinity or NaN
    if (magnitude >= 0x477ff000u) {          // 65520 and up
        magnitude = 0x7f800000u;
    } else if (magnitude >= 0x38800000u) {  // 2^-14 and up: a normal half
        // As round_to_bf16 does, keeping 10 of float32's 23 stored mantissa bits.
        magnitude += 0xfffu + ((magnitude >> 13) & 1u);
        magnitude &= 0xffffe000u;
    } else if (magnitude <= 0x33000000u) {  // 2^-25 (half the smallest subnormal, a tie) or less
        magnitude = 0;
    } else {  // a subnormal half: a whole number of 2^-24, rounded to nearest, ties to even
        const std::uint32_t mantissa = (magnitude & 0x007fffffu) | 0x00800000u;
        // x = mantissa * 2^(exponent - 150) with exponent in [102, 112]: drop `shift` bits
        // to count in steps of 2^-24.
        const std::uint32_t shift = 126u - (magnitude >> 23);
        std::uint32_t steps = mantissa >> shift;
        const std::uint32_t rest = mantissa & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rest > half || (rest == half && (steps & 1u))) ++steps;
        const float value = static_cast<float>(steps) * 0x1p-24f;  // exact: steps <= 2^10
        std::memcpy(&magnitude, &value, sizeof magnitude);
    }
    bits = sign | magnitude;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

// `x` as a kernel computing in `precision` reads it. fp32 and tf32 leave it unchanged: tf32 is
// no precision the layers' kernels take (TF32 tensor cores are the CUDA device's `tf32`
// option, which rounds inside the library's kernels).
inline float round_to(Precision precision, float x) {
    switch (precision) {
        case Precision::fp16: return round_to_fp16(x);
        case Precision::bf16: return round_to_bf16(x);
        case Precision::fp32:
        case Precision::tf32: break;
    }
    return x;
}

}  // namespace tandem

// What convolutions and matrix products compute in: a net's precision, and what the planner's
// GPU models plan for.
//
// fp32: float32 throughout. bf16 (trained on CPUs with AVX512_BF16 or AMX): their operands (the
// activation, the weights and, backward, the gradient arriving) are rounded to bfloat16
// (float32's exponent, 8 bits of mantissa), the products summed in float32 and the results
// written in float32, as PyTorch's CPU autocast computes them. Everything else stays float32:
// the weights the optimizer updates (the master copy), the other layers' math, the activations
// between layers and the checkpoints, so a run may resume in the other precision. bfloat16
// keeps float32's range: no loss scaling. tf32 (TF32 tensor cores: the CUDA device's `tf32`
// option) and fp16 (half precision with float32 master weights) are what the planner's GPU
// models price; Tandem does not train in fp16 yet.
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

}  // namespace tandem

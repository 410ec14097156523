// Parameter initialisation schemes, drawn from the counter-based RNG (base/rng.h).
//
// Element i (in logical, row-major order) is a pure function of (seed, i), so a net
// initialised with the same seed has the same weights on every device, thread count and
// layout, and a replica group needs no broadcast to start from identical weights.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor.h"

namespace tandem {

// Fills `t` by `scheme`:
//   "kaiming"          normal, std sqrt(2 / fan_in)           (He et al., for ReLU nets)
//   "kaiming_uniform"  uniform in +-sqrt(6 / fan_in)
//   "xavier"           uniform in +-sqrt(6 / (fan_in + fan_out))   (Glorot)
//   "xavier_normal"    normal, std sqrt(2 / (fan_in + fan_out))
//   "zeros"            all zero
// Throws ConfigError listing the known schemes for an unknown one, and for a non-positive fan
// that the scheme divides by.
void init_tensor(Tensor& t, std::string_view scheme, std::int64_t fan_in, std::int64_t fan_out,
                 std::uint64_t seed);

bool is_init_scheme(std::string_view scheme);
std::vector<std::string> init_schemes();

}  // namespace tandem

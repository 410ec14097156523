// Counter-based random numbers: a value is a pure function of (key, counter).
//
// Nothing is stateful, so a dropout mask or an initialisation is the same whatever the
// thread count, the device, or the order in which micro-batches run, and a checkpoint only
// needs the seed and the step to resume the exact stream. The mixing is SplitMix64's
// finaliser applied twice, which passes BigCrush for sequential counters.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace tandem {

constexpr std::uint64_t rng_mix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// A new key from a key and a value (a step, a micro-batch index, a layer id).
constexpr std::uint64_t rng_key(std::uint64_t key, std::uint64_t value) {
    return rng_mix(rng_mix(key) ^ (value * 0xd1b54a32d192ed03ULL));
}

// A key from text (a layer's name), FNV-1a.
constexpr std::uint64_t rng_key(std::uint64_t key, std::string_view text) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    return rng_key(key, h);
}

constexpr std::uint64_t rng_bits(std::uint64_t key, std::uint64_t counter) {
    return rng_mix(key ^ rng_mix(counter));
}

// Uniform in [0, 1), 24 bits of resolution (exact in float32).
constexpr float rng_uniform(std::uint64_t key, std::uint64_t counter) {
    return static_cast<float>(rng_bits(key, counter) >> 40) * (1.0f / 16777216.0f);
}

// Standard normal by Box-Muller over two uniforms drawn from counter pairs.
inline float rng_normal(std::uint64_t key, std::uint64_t counter) {
    const std::uint64_t bits = rng_bits(key, counter);
    const double u1 = (static_cast<double>(bits >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    const double u2 = static_cast<double>(rng_bits(key ^ 0x5bd1e995ULL, counter) >> 11) *
                      (1.0 / 9007199254740992.0);
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

}  // namespace tandem

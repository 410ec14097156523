// Channel vectors: GCC's vector extension over the channels-last layout, 16 floats in one
// AVX-512 register where the build's CPU has AVX-512, 8 in an AVX register on AVX2 (two SSE
// registers on older ones), with loads and stores of a partial vector (the last channels of a
// pixel) through masked moves. Our own channels-last kernels run on them: Winograd's tiles,
// max pooling, batch normalisation.
#pragma once

#include <cstdint>
#include <cstring>

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace tandem::cpu::vec {

#ifdef __AVX512F__
// AVX-512: 16 channels a vector, partial ones through mask registers.
using Vec = float __attribute__((vector_size(64)));
constexpr int kVec = 16;  // channels in a Vec
using UnalignedVec = float __attribute__((vector_size(64), aligned(4), may_alias));

inline Vec load(const float* p, int lanes) {
    if (lanes == kVec) return *reinterpret_cast<const UnalignedVec*>(p);
    return reinterpret_cast<Vec>(
        _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << lanes) - 1), p));
}

inline void store(float* p, const Vec& v, int lanes) {
    if (lanes == kVec) {
        *reinterpret_cast<UnalignedVec*>(p) = v;
        return;
    }
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << lanes) - 1),
                          reinterpret_cast<__m512>(v));
}
#else
using Vec = float __attribute__((vector_size(32)));
constexpr int kVec = 8;  // channels in a Vec
// The same in memory at any float's alignment (an unaligned load or store).
using UnalignedVec = float __attribute__((vector_size(32), aligned(4), may_alias));

#ifdef __AVX2__
// The first `lanes` lanes set: AVX's masked loads and stores touch no memory past them.
inline __m256i lane_mask(int lanes) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif

// `lanes` (1..8) channels from p; the rest zero. Partial vectors (LeNet-5's 20 and 50 channels)
// go through AVX's masked moves: a copy through memory took a third of a 20-channel layer's
// Winograd forward.
inline Vec load(const float* p, int lanes) {
    if (lanes == kVec) return *reinterpret_cast<const UnalignedVec*>(p);
#ifdef __AVX2__
    return reinterpret_cast<Vec>(_mm256_maskload_ps(p, lane_mask(lanes)));
#else
    Vec v{};
    std::memcpy(&v, p, lanes * sizeof(float));
    return v;
#endif
}

inline void store(float* p, const Vec& v, int lanes) {
    if (lanes == kVec) {
        *reinterpret_cast<UnalignedVec*>(p) = v;
        return;
    }
#ifdef __AVX2__
    _mm256_maskstore_ps(p, lane_mask(lanes), reinterpret_cast<__m256>(v));
#else
    std::memcpy(p, &v, lanes * sizeof(float));
#endif
}

#endif

// A store that goes to memory without reading the line into the caches first (a streaming,
// non-temporal store) where `p` holds a whole vector at the vector's alignment; `store` else.
// For outputs written whole that the caches no longer hold: a forward pass writes each
// activation into memory last touched a step ago, and an ordinary store reads every line in
// before it overwrites it. The caller ends its writes with `streaming_done` before another
// thread reads them (streaming stores are not ordered with the others).
inline void store_streaming(float* p, const Vec& v, int lanes) {
#if defined(__AVX512F__)
    if (lanes == kVec && (reinterpret_cast<std::uintptr_t>(p) & 63) == 0) {
        _mm512_stream_ps(p, reinterpret_cast<__m512>(v));
        return;
    }
#elif defined(__AVX2__)
    if (lanes == kVec && (reinterpret_cast<std::uintptr_t>(p) & 31) == 0) {
        _mm256_stream_ps(p, reinterpret_cast<__m256>(v));
        return;
    }
#endif
    store(p, v, lanes);
}

inline void streaming_done() {
#ifdef __AVX2__
    _mm_sfence();
#endif
}

}  // namespace tandem::cpu::vec

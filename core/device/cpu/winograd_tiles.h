// Winograd's minimal filtering F(m x m, r x r) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2016): an m x m block of an r x r convolution's output from
// one a x a input tile (a = m + r - 1) with a*a multiplications per pair of channels, where the
// direct form takes r*r*m*m:
//   Y = A^T [ (G g G^T) (.) (B^T d B) ] A
// d is the input tile, g the filter, (.) the elementwise product. The element products of all
// tiles and channel pairs are a*a independent matrix products, which is where the time goes.
// Here: F(2x2, 3x3), F(4x4, 3x3) and F(2x2, 5x5).
//
// The transforms here work on tiles of channel vectors (GCC's vector extension over the
// channels-last layout: 16 channels in one AVX-512 register where the build's CPU has AVX-512, 8
// in an AVX register on AVX2, two SSE registers on older ones). On a Zen 5, one and two threads,
// the 16-channel vectors took 12% off ResNet-20's float32 step, 8-12% off AlexNet's and 20-25%
// off smallbn's against the 8-channel ones (alternating runs). The
// matrices are compile-time constants and the loops unroll fully, so a product by a zero
// entry vanishes and one by +-1 is an add: F(4x4)'s input transform costs 20 vector operations
// a row instead of 36.
#pragma once

#include <array>

#include "device/cpu/channel_vectors.h"

namespace tandem::cpu::winograd {

// The channel vectors (channel_vectors.h).
using vec::kVec;
using vec::load;
using vec::store;
using vec::UnalignedVec;
using vec::Vec;

template <int Rows, int Cols>
constexpr std::array<float, Rows * Cols> transpose(const std::array<float, Rows * Cols>& x) {
    std::array<float, Rows * Cols> t{};
    for (int i = 0; i < Rows; ++i)
        for (int j = 0; j < Cols; ++j) t[j * Rows + i] = x[i * Cols + j];
    return t;
}

// The matrices of F(m x m, 3 x 3), row-major: B^T (a x a), G (a x 3), A^T (m x a), and the
// transposes backward needs (the gradient of a product by M is a product by M^T).
template <int M, int R>
struct Matrices;

// F(2x2, 3x3): interpolation points 0, 1, -1 and infinity.
template <>
struct Matrices<2, 3> {
    static constexpr int m = 2, a = 4;
    static constexpr std::array<float, 16> bt = {1, 0,  -1, 0,  //
                                                 0, 1,  1,  0,  //
                                                 0, -1, 1,  0,  //
                                                 0, 1,  0,  -1};
    static constexpr std::array<float, 12> g = {1,   0,    0,    //
                                                0.5, 0.5,  0.5,  //
                                                0.5, -0.5, 0.5,  //
                                                0,   0,    1};
    static constexpr std::array<float, 8> at = {1, 1, 1,  0,  //
                                                0, 1, -1, -1};
    static constexpr auto gt = transpose<4, 3>(g);
    static constexpr auto a_ = transpose<2, 4>(at);
};

// F(4x4, 3x3): interpolation points 0, 1, -1, 2, -2 and infinity. G's row for a point p is
// f [1, p, p^2] and A^T's column [1, p, p^2, p^3] (the infinite point: the last power alone).
template <>
struct Matrices<4, 3> {
    static constexpr int m = 4, a = 6;
    static constexpr std::array<float, 36> bt = {4, 0,  -5, 0,  1, 0,  //
                                                 0, -4, -4, 1,  1, 0,  //
                                                 0, 4,  -4, -1, 1, 0,  //
                                                 0, -2, -1, 2,  1, 0,  //
                                                 0, 2,  -1, -2, 1, 0,  //
                                                 0, 4,  0,  -5, 0, 1};
    static constexpr std::array<float, 18> g = {1.f / 4,  0,         0,         //
                                                -1.f / 6, -1.f / 6,  -1.f / 6,  //
                                                -1.f / 6, 1.f / 6,   -1.f / 6,  //
                                                1.f / 24, 1.f / 12,  1.f / 6,   //
                                                1.f / 24, -1.f / 12, 1.f / 6,   //
                                                0,        0,         1};
    static constexpr std::array<float, 24> at = {1, 1, 1,  1, 1,  0,  //
                                                 0, 1, -1, 2, -2, 0,  //
                                                 0, 1, 1,  4, 4,  0,  //
                                                 0, 1, -1, 8, -8, 1};
    static constexpr auto gt = transpose<6, 3>(g);
    static constexpr auto a_ = transpose<4, 6>(at);
};

// F(2x2, 5x5): the same points as F(4x4, 3x3), so the same B^T; G's row for p is
// f [1, p, p^2, p^3, p^4] with the same f, and A^T's column [1, p].
template <>
struct Matrices<2, 5> {
    static constexpr int m = 2, a = 6;
    static constexpr auto bt = Matrices<4, 3>::bt;
    static constexpr std::array<float, 30> g = {
        1.f / 4,  0,         0,        0,        0,         //
        -1.f / 6, -1.f / 6,  -1.f / 6, -1.f / 6, -1.f / 6,  //
        -1.f / 6, 1.f / 6,   -1.f / 6, 1.f / 6,  -1.f / 6,  //
        1.f / 24, 1.f / 12,  1.f / 6,  1.f / 3,  2.f / 3,   //
        1.f / 24, -1.f / 12, 1.f / 6,  -1.f / 3, 2.f / 3,   //
        0,        0,         0,        0,        1};
    static constexpr std::array<float, 12> at = {1, 1, 1,  1, 1,  0,  //
                                                 0, 1, -1, 2, -2, 1};
    static constexpr auto gt = transpose<6, 5>(g);
    static constexpr auto a_ = transpose<2, 6>(at);
};

// The 1-D transform by L (P x R): out[i * so] = sum over k of L[i][k] in[k * si]. Zero
// entries are skipped at compile time. Inlined where it is used, so the strides are constants.
template <int P, int R, const auto& L>
[[gnu::always_inline]] inline void transform_1d(const Vec* in, int si, Vec* out, int so) {
#pragma GCC unroll 8
    for (int i = 0; i < P; ++i) {
        Vec sum{};
        bool started = false;
#pragma GCC unroll 8
        for (int k = 0; k < R; ++k) {
            const float w = L[i * R + k];
            if (w == 0.f) continue;
            sum = started ? sum + w * in[k * si] : w * in[k * si];
            started = true;
        }
        out[i * so] = sum;
    }
}

// out = L in: L is P x R, in R x Q, out P x Q (the transform down each column).
template <int P, int R, int Q, const auto& L>
inline void left(const Vec* in, Vec* out) {
#pragma GCC unroll 8
    for (int j = 0; j < Q; ++j) transform_1d<P, R, L>(in + j, Q, out + j, Q);
}

// out = in R^T: in is P x K, R is Q x K, out P x Q (the transform along each row).
template <int P, int K, int Q, const auto& Rm>
inline void right(const Vec* in, Vec* out) {
#pragma GCC unroll 8
    for (int i = 0; i < P; ++i) transform_1d<Q, K, Rm>(in + i * K, 1, out + i * Q, 1);
}

// out = L in L^T: in is R x R, L is P x R, out P x P.
template <int P, int R, const auto& L>
inline void sandwich(const Vec* in, Vec* out) {
    Vec tmp[P * R];
    left<P, R, R, L>(in, tmp);
    right<P, R, P, L>(tmp, out);
}

}  // namespace tandem::cpu::winograd

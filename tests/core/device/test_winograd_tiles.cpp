#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "device/cpu/winograd_tiles.h"

namespace tandem::test {
namespace {

namespace wg = cpu::winograd;

// left<P, R, Q, L> (the unrolled product that skips zero entries) and right<> against the
// matrix products they stand for, on random vectors.
template <int P, int R, const auto& L>
void expect_matrix_product(const char* what) {
    SCOPED_TRACE(what);
    constexpr int kQ = 2;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1.f, 1.f);
    wg::Vec in[R * kQ], out[P * kQ], in_t[kQ * R], out_t[kQ * P];
    for (int k = 0; k < R; ++k)
        for (int j = 0; j < kQ; ++j)
            for (int c = 0; c < wg::kVec; ++c)
                in_t[j * R + k][c] = in[k * kQ + j][c] = uniform(rng);
    wg::left<P, R, kQ, L>(in, out);       // L in
    wg::right<kQ, R, P, L>(in_t, out_t);  // in^T L^T, the transpose of L in
    for (int i = 0; i < P; ++i)
        for (int j = 0; j < kQ; ++j)
            for (int c = 0; c < wg::kVec; ++c) {
                double expected = 0;
                for (int k = 0; k < R; ++k) expected += double(L[i * R + k]) * in[k * kQ + j][c];
                EXPECT_NEAR(out[i * kQ + j][c], expected, 1e-5) << "left, row " << i;
                EXPECT_NEAR(out_t[j * P + i][c], expected, 1e-5) << "right, row " << i;
            }
}

TEST(WinogradTiles, TransformsAreTheirMatrices) {
    using F43 = wg::Matrices<4, 3>;
    using F23 = wg::Matrices<2, 3>;
    using F25 = wg::Matrices<2, 5>;
    expect_matrix_product<6, 6, F43::bt>("F(4x4, 3x3) B^T");
    expect_matrix_product<4, 6, F43::at>("F(4x4, 3x3) A^T");
    expect_matrix_product<6, 4, F43::a_>("F(4x4, 3x3) A");
    expect_matrix_product<6, 3, F43::g>("F(4x4, 3x3) G");
    expect_matrix_product<3, 6, F43::gt>("F(4x4, 3x3) G^T");
    expect_matrix_product<4, 4, F23::bt>("F(2x2, 3x3) B^T");
    expect_matrix_product<2, 4, F23::at>("F(2x2, 3x3) A^T");
    expect_matrix_product<6, 6, F25::bt>("F(2x2, 5x5) B^T");
    expect_matrix_product<2, 6, F25::at>("F(2x2, 5x5) A^T");
    expect_matrix_product<6, 5, F25::g>("F(2x2, 5x5) G");
}

// The identity behind every tile: for a 1-D signal d and filter g, A^T [(G g) (.) (B^T d)]
// is the correlation of d with g. Checks the matrices themselves, apart from any kernel.
template <int M, int R>
void expect_minimal_filtering() {
    using T = wg::Matrices<M, R>;
    constexpr int a = T::a;
    std::mt19937 rng(M * 10 + R);
    std::uniform_real_distribution<double> uniform(-1, 1);
    double d[a], g[R], product[a];
    for (auto& x : d) x = uniform(rng);
    for (auto& x : g) x = uniform(rng);
    for (int i = 0; i < a; ++i) {
        double gi = 0, di = 0;
        for (int k = 0; k < R; ++k) gi += T::g[i * R + k] * g[k];
        for (int k = 0; k < a; ++k) di += T::bt[i * a + k] * d[k];
        product[i] = gi * di;
    }
    for (int y = 0; y < M; ++y) {
        double winograd = 0, direct = 0;
        for (int i = 0; i < a; ++i) winograd += T::at[y * a + i] * product[i];
        for (int k = 0; k < R; ++k) direct += d[y + k] * g[k];
        EXPECT_NEAR(winograd, direct, 1e-6) << "F(" << M << ", " << R << ") output " << y;
    }
}

TEST(WinogradTiles, MatricesComputeTheCorrelation) {
    expect_minimal_filtering<2, 3>();
    expect_minimal_filtering<4, 3>();
    expect_minimal_filtering<2, 5>();
}

// A partial vector's load reads its lanes and zeroes the rest; its store writes its lanes and
// nothing past them (the masked moves on AVX2, a copy elsewhere): the Winograd and pooling
// kernels read and write channel counts such as 20 and 50 this way.
TEST(WinogradTiles, PartialVectorsTouchOnlyTheirLanes) {
    for (int lanes = 1; lanes <= wg::kVec; ++lanes) {
        float source[2 * wg::kVec], sink[2 * wg::kVec];
        for (int i = 0; i < 2 * wg::kVec; ++i) source[i] = float(i + 1), sink[i] = -1.f;
        const wg::Vec v = wg::load(source + 3, lanes);
        for (int c = 0; c < wg::kVec; ++c)
            EXPECT_EQ(v[c], c < lanes ? float(c + 4) : 0.f) << lanes << " lanes, lane " << c;
        wg::store(sink + 3, v + 100.f, lanes);
        for (int i = 0; i < 2 * wg::kVec; ++i) {
            const bool written = i >= 3 && i < 3 + lanes;
            EXPECT_EQ(sink[i], written ? float(i + 1) + 100.f : -1.f)
                << lanes << " lanes, at " << i;
        }
    }
}

}  // namespace
}  // namespace tandem::test

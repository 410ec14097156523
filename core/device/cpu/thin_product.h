// Matrix products for Winograd's element stage (conv2d_winograd.cpp): a*a products a chunk of
// tiles, each rows x cols = (rows x inner) (inner x cols). Thin ones (up to 64 columns of whole
// vectors, B in L1: smallbn's and ResNet's 16-64 channel layers) run on register blocks here:
// oneDNN's SGEMM spent more on each such call than the product took (smallbn's 32-channel
// layer's forward went from 26 to 16 ms on one Zen 3 core when they moved here). Wider ones go to
// SGEMM, which blocks them for the caches.
#pragma once

#include <cstdint>

#include "device/cpu/dnnl_context.h"
#include "device/cpu/winograd_tiles.h"

namespace tandem::cpu::winograd {

// A matrix operand: element (i, k) at p[i * row + k * col] (B and C: p[i * row + k]).
struct Strided {
    const float* p;
    std::int64_t row, col;
};
struct Rows {
    const float* p;
    std::int64_t row;
};
struct Output {
    float* p;
    std::int64_t row;
};

// C (R x 8*NV) = A (R x inner) B (inner x 8*NV), plus C when accumulating: a register block.
template <int R, int NV>
inline void product_block(Strided a, Rows b, std::int64_t inner, bool accumulate, Output c) {
    Vec sum[R][NV];
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < NV; ++j)
            sum[i][j] = accumulate ? load(c.p + i * c.row + j * kVec, kVec) : Vec{};
    for (std::int64_t k = 0; k < inner; ++k) {
        Vec bk[NV];
        for (int j = 0; j < NV; ++j) bk[j] = load(b.p + k * b.row + j * kVec, kVec);
        for (int i = 0; i < R; ++i) {
            const float s = a.p[i * a.row + k * a.col];
            for (int j = 0; j < NV; ++j) sum[i][j] += s * bk[j];
        }
    }
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < NV; ++j) store(c.p + i * c.row + j * kVec, sum[i][j], kVec);
}

// Rows in blocks of 6 (two vectors of columns: 12 accumulators, two for B's row, one
// broadcast, of AVX's 16 registers) or 8 (one vector): against blocks of 4 rows, 12
// multiply-adds for every 8 loads instead of 8 for 6, and 5-13% off the Winograd passes of
// ResNet's 16-channel layer and LeNet-5's 20 -> 50 (one Zen 3 core, alternating runs).
template <int NV>
inline void product_columns(Strided a, Rows b, std::int64_t rows, std::int64_t inner,
                            bool accumulate, Output c) {
    constexpr int kRows = NV == 1 ? 8 : 6;
    std::int64_t i = 0;
    for (; i + kRows <= rows; i += kRows)
        product_block<kRows, NV>({a.p + i * a.row, a.row, a.col}, b, inner, accumulate,
                                 {c.p + i * c.row, c.row});
    // The rest in halving blocks: one row alone keeps too few sums in flight to hide the
    // multiply-add's latency (the weights' pass of a 16-channel layer has 4 rows left).
    const auto rest = [&]<int R>() {
        if (i + R <= rows) {
            product_block<R, NV>({a.p + i * a.row, a.row, a.col}, b, inner, accumulate,
                                 {c.p + i * c.row, c.row});
            i += R;
        }
    };
    if constexpr (kRows > 4) rest.template operator()<4>();
    rest.template operator()<2>();
    rest.template operator()<1>();
}

// C (rows x cols) = A B (+ C when accumulating): the register blocks for thin products,
// SGEMM for the rest. False when SGEMM failed.
inline bool thin(std::int64_t cols, std::int64_t inner) {
    return cols % kVec == 0 && cols <= 64 && inner * cols <= 64 * 64;
}

inline bool multiply(Strided a, Rows b, std::int64_t rows, std::int64_t cols, std::int64_t inner,
                     bool accumulate, Output c) {
    if (thin(cols, inner)) {
        std::int64_t j = 0;
        for (; j + 2 * kVec <= cols; j += 2 * kVec)
            product_columns<2>(a, {b.p + j, b.row}, rows, inner, accumulate, {c.p + j, c.row});
        if (j < cols)
            product_columns<1>(a, {b.p + j, b.row}, rows, inner, accumulate, {c.p + j, c.row});
        return true;
    }
    const bool transposed = a.row == 1;  // A's rows are contiguous along the other index
    return dnnl_sgemm(transposed ? 'T' : 'N', 'N', rows, cols, inner, 1.f, a.p,
                      transposed ? a.col : a.row, b.p, b.row, accumulate ? 1.f : 0.f, c.p,
                      c.row) == dnnl_success;
}

}  // namespace tandem::cpu::winograd

// The CUDA backend's layout logic in plain C++ (no CUDA header): tensor dimensions and strides
// as cuDNN takes them, the GEMM arguments of a row-major Linear layer on column-major cuBLAS,
// the convolution algorithm choice under a workspace budget, and what cuDNN's LRN accepts.
// Everything here is decided on the host before any call, so the CPU-side tests cover it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "kernels/kernels.h"

namespace tandem::cuda {

// A 4-D tensor as cudnnSetTensor4dDescriptorEx takes it: sizes in N, C, H, W order and the
// element strides of each, for the contiguous (NCHW) or channels_last (NHWC) layout.
struct Dims4 {
    int n = 0, c = 0, h = 0, w = 0;
    int stride_n = 0, stride_c = 0, stride_h = 0, stride_w = 0;
    auto operator<=>(const Dims4&) const = default;
};

// cuDNN's legacy API takes int sizes: throws ShapeError naming `what` when the tensor has
// 2^31 elements or more.
Dims4 dims4(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, Layout layout,
            std::string_view what);
int checked_int(std::int64_t value, std::string_view what);

// One cublasSgemm call, column-major: C = alpha op(A) op(B) + beta C with C m x n.
struct Gemm {
    bool transpose_a = false, transpose_b = false;
    int m = 0, n = 0, k = 0;
    int lda = 0, ldb = 0, ldc = 0;
    float beta = 0;  // 0 overwrites C, 1 adds into it
    auto operator<=>(const Gemm&) const = default;
};

// Row-major n x in src, out x in weights, n x out dst, seen by cuBLAS as their transposes.
// forward:          dst = src W^T       A = weights, B = src,      C = dst
// backward_data:    diff_src = diff_dst W   A = weights, B = diff_dst, C = diff_src
// backward_weights: diff_W += diff_dst^T src  A = src, B = diff_dst, C = diff_weights
Gemm linear_forward_gemm(const LinearConfig& c);
Gemm linear_backward_data_gemm(const LinearConfig& c);
Gemm linear_backward_weights_gemm(const LinearConfig& c);

// What cuDNN reported about one convolution algorithm (from cudnnFind*AlgorithmEx, sorted by
// time, or cudnnGet*Algorithm_v7, sorted by its heuristics).
struct AlgoCandidate {
    int algo = 0;
    bool ok = false;     // status == CUDNN_STATUS_SUCCESS
    std::string status;  // cuDNN's name for the status when not ok, for the error
    float time_ms = -1;  // measured time (Find) or -1 (heuristics)
    std::size_t memory = 0;
    // CUDNN_DETERMINISTIC: the same bits every run (not so the algorithms that sum with
    // atomics: backward filter 0 and 3, backward data 0).
    bool deterministic = true;
};

// The first usable candidate whose workspace fits `budget`, in the order cuDNN gave them
// (fastest or most promising first); with `deterministic_only`, the first such of the
// deterministic ones. Throws BackendError naming `what` when none qualifies: the budget and
// the smallest workspace any usable algorithm needs, or the usable algorithms that are not
// deterministic.
std::size_t choose_algorithm(std::span<const AlgoCandidate> candidates, std::size_t budget,
                             std::string_view what, bool deterministic_only = false);

// Why cuDNN's cross-channel LRN cannot run `c` with PyTorch's semantics, or nothing when it
// can: cuDNN accepts 1 <= size <= 16, k >= 1e-5, beta >= 0.01, and centres an even window one
// channel later than PyTorch (look-behind (size-1)/2 instead of size/2).
std::optional<std::string> lrn_unsupported(const LrnConfig& c);

// Biased (1/m) from unbiased (1/(m-1)) variance: cuDNN's running variance is unbiased, our
// kernel contract returns the biased batch variance. 0 for m = 1 (one value has no spread).
float unbiased_to_biased(std::int64_t m);

}  // namespace tandem::cuda

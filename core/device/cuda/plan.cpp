#include "device/cuda/plan.h"

#include <algorithm>
#include <limits>

#include "base/error.h"
#include "base/format.h"

namespace tandem::cuda {

int checked_int(std::int64_t value, std::string_view what) {
    TANDEM_CHECK_AS(ShapeError, value >= 0 && value <= std::numeric_limits<int>::max())
        << what << ": " << value << " does not fit the int that cuDNN and cuBLAS take";
    return static_cast<int>(value);
}

Dims4 dims4(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, Layout layout,
            std::string_view what) {
    checked_int(n * c * h * w, std::string(what) + " (elements of " + std::to_string(n) + "x" +
                                   std::to_string(c) + "x" + std::to_string(h) + "x" +
                                   std::to_string(w) + ")");
    Dims4 d{int(n), int(c), int(h), int(w), 0, 0, 0, 0};
    if (layout == Layout::channels_last) {
        d.stride_c = 1;
        d.stride_w = d.c;
        d.stride_h = d.w * d.c;
        d.stride_n = d.h * d.w * d.c;
    } else {
        d.stride_w = 1;
        d.stride_h = d.w;
        d.stride_c = d.h * d.w;
        d.stride_n = d.c * d.h * d.w;
    }
    return d;
}

Gemm linear_forward_gemm(const LinearConfig& c) {
    // dst^T (out x n) = W (out x in) src^T: W is stored as its transpose (in x out, ld in).
    const int n = checked_int(c.n, "Linear batch"), in = checked_int(c.in_features, "Linear in"),
              out = checked_int(c.out_features, "Linear out");
    return Gemm{true, false, out, n, in, in, in, out, 0.f};
}

Gemm linear_backward_data_gemm(const LinearConfig& c) {
    // diff_src^T (in x n) = W^T (in x out) diff_dst^T (out x n).
    const int n = checked_int(c.n, "Linear batch"), in = checked_int(c.in_features, "Linear in"),
              out = checked_int(c.out_features, "Linear out");
    return Gemm{false, false, in, n, out, in, out, in, 0.f};
}

Gemm linear_backward_weights_gemm(const LinearConfig& c) {
    // diff_W^T (in x out) += src^T (in x n) diff_dst (n x out); diff_dst is stored as its
    // transpose (out x n, ld out), hence op(B) = T.
    const int n = checked_int(c.n, "Linear batch"), in = checked_int(c.in_features, "Linear in"),
              out = checked_int(c.out_features, "Linear out");
    return Gemm{false, true, in, out, n, in, out, in, 1.f};
}

std::size_t choose_algorithm(std::span<const AlgoCandidate> candidates, std::size_t budget,
                             std::string_view what, bool deterministic_only) {
    std::size_t smallest = std::numeric_limits<std::size_t>::max();
    int smallest_algo = -1;
    std::string nondeterministic;  // usable candidates passed over for deterministic mode
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const auto& a = candidates[i];
        if (!a.ok) continue;
        if (deterministic_only && !a.deterministic) {
            nondeterministic += (nondeterministic.empty() ? "" : ", ") + std::to_string(a.algo);
            continue;
        }
        if (a.memory <= budget) return i;
        if (a.memory < smallest) {
            smallest = a.memory;
            smallest_algo = a.algo;
        }
    }
    if (smallest_algo < 0 && !nondeterministic.empty())
        TANDEM_THROW(BackendError) << what << ": cuDNN offers no deterministic algorithm (the "
                                   << "usable ones, " << nondeterministic << ", sum with atomics); "
                                   << "this layer cannot run in deterministic mode on this GPU";
    if (smallest_algo < 0) {
        std::string statuses;
        for (const auto& a : candidates)
            statuses += (statuses.empty() ? "" : ", ") + std::to_string(a.algo) + ": " + a.status;
        TANDEM_THROW(BackendError)
            << what << ": cuDNN offers no usable algorithm (" << candidates.size()
            << " candidates, none with a success status: " << statuses << ")";
    }
    TANDEM_THROW(BackendError) << what << ": no " << (deterministic_only ? "deterministic " : "")
                               << "algorithm fits the workspace budget of "
                               << format_bytes(double(budget)) << " (the smallest, algorithm "
                               << smallest_algo << ", needs " << format_bytes(double(smallest))
                               << "); raise the device's workspace option";
}

std::optional<std::string> lrn_unsupported(const LrnConfig& c) {
    if (c.size < 1 || c.size > 16)
        return "cuDNN's LRN takes a window of 1 to 16 channels, not " + std::to_string(c.size);
    if (c.size % 2 == 0)
        return "cuDNN centres an even LRN window (size " + std::to_string(c.size) +
               ") one channel later than PyTorch and the CPU kernels; use an odd size";
    if (c.k < 1e-5f) return "cuDNN's LRN needs k >= 1e-5, got " + std::to_string(c.k);
    if (c.beta < 0.01f) return "cuDNN's LRN needs beta >= 0.01, got " + std::to_string(c.beta);
    return std::nullopt;
}

float unbiased_to_biased(std::int64_t m) {
    return m > 1 ? float(double(m - 1) / double(m)) : 0.f;
}

}  // namespace tandem::cuda

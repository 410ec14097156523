// The CUDA backend's host-side layout logic (no GPU needed): cuDNN dimensions and strides,
// the cuBLAS GEMM arguments of Linear (run here by a naive column-major GEMM and compared with
// the CPU reference kernel), the algorithm choice under a workspace budget, LRN limits and the
// math of our own LRN kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/error.h"
#include "device/cuda/batch_norm_nhwc.cuh"
#include "device/cuda/lrn_pixel.h"
#include "device/cuda/plan.h"
#include "kernels/registry.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

using namespace tandem::cuda;

TEST(CudaPlan, DimsMatchTensorStrides) {
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        const Dims4 d = dims4(2, 3, 4, 5, layout, "test");
        const auto s = layout_strides(Shape{2, 3, 4, 5}, layout);
        EXPECT_EQ((std::vector<std::int64_t>{d.stride_n, d.stride_c, d.stride_h, d.stride_w}), s);
        EXPECT_EQ(d.n, 2);
        EXPECT_EQ(d.w, 5);
    }
}

TEST(CudaPlan, SizesPastIntAreShapeErrors) {
    EXPECT_THROW(dims4(1 << 16, 1 << 16, 1, 1, Layout::contiguous, "Conv2d src"), ShapeError);
    try {
        checked_int(std::int64_t(1) << 31, "Linear batch");
        ADD_FAILURE();
    } catch (const ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("Linear batch: 2147483648 does not fit"),
                  std::string::npos);
    }
}

// cublasSgemm's definition, column-major, on the host.
void host_gemm(const Gemm& g, const float* a, const float* b, float* c) {
    for (int i = 0; i < g.m; ++i)
        for (int j = 0; j < g.n; ++j) {
            double sum = 0;
            for (int p = 0; p < g.k; ++p) {
                const float av = g.transpose_a ? a[p + i * g.lda] : a[i + p * g.lda];
                const float bv = g.transpose_b ? b[j + p * g.ldb] : b[p + j * g.ldb];
                sum += double(av) * bv;
            }
            c[i + j * g.ldc] = float(sum + double(g.beta) * c[i + j * g.ldc]);
        }
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4 * std::max(1.f, std::fabs(want[i]))) << what << " " << i;
}

TEST(CudaPlan, LinearGemmsMatchTheReferenceKernel) {
    const LinearConfig c{3, 5, 4, false};
    Device& host = test_device();
    auto ref = KernelRegistry::instance().make<LinearKernel>(host, c, "reference");
    const Tensor x = random_tensor({3, 5}, host, 1);
    const Tensor w = random_tensor({4, 5}, host, 2);
    const Tensor dy = random_tensor({3, 4}, host, 3);
    Tensor undefined;

    Tensor y = Tensor::zeros({3, 4}, host);
    ref->forward(x, w, undefined, y);
    std::vector<float> got(12, 0.f);
    host_gemm(linear_forward_gemm(c), w.data<float>(), x.data<float>(), got.data());
    expect_near(got, y.to_vector(), "forward");

    Tensor dx = Tensor::zeros({3, 5}, host);
    ref->backward_data(dy, w, dx);
    got.assign(15, 0.f);
    host_gemm(linear_backward_data_gemm(c), w.data<float>(), dy.data<float>(), got.data());
    expect_near(got, dx.to_vector(), "backward_data");

    // Accumulates: both start from the same non-zero gradient.
    Tensor dw = random_tensor({4, 5}, host, 4);
    got = dw.to_vector();
    ref->backward_weights(x, dy, dw, undefined);
    host_gemm(linear_backward_weights_gemm(c), x.data<float>(), dy.data<float>(), got.data());
    EXPECT_EQ(linear_backward_weights_gemm(c).beta, 1.f);
    expect_near(got, dw.to_vector(), "backward_weights");
}

// The text of the BackendError choose_algorithm throws; "" when it chooses.
std::string choice_error(std::span<const AlgoCandidate> list, std::size_t budget,
                         std::string_view what, bool deterministic = false) {
    try {
        choose_algorithm(list, budget, what, deterministic);
    } catch (const BackendError& e) {
        return e.what();
    }
    return "";
}

TEST(CudaPlan, AlgorithmChoiceUnderBudget) {
    const std::vector<AlgoCandidate> list{
        {7, false, "CUDNN_STATUS_NOT_SUPPORTED", 0.1f, 0},  // fastest but failed: skipped
        {1, true, "", 0.2f, 5000},                          // over the budget
        {6, true, "", 0.3f, 1000},                          // first to fit
        {0, true, "", 0.9f, 0},
    };
    EXPECT_EQ(choose_algorithm(list, 2000, "Conv2d forward"), 2u);
    EXPECT_EQ(choose_algorithm(list, 5000, "Conv2d forward"), 1u);
    EXPECT_EQ(choose_algorithm(list, 0, "Conv2d forward"), 3u);
    EXPECT_EQ(choice_error(std::span(list).first(3), 512, "Conv2d forward (2x3x8x8)"),
              "Conv2d forward (2x3x8x8): no algorithm fits the workspace budget of 512 B (the "
              "smallest, algorithm 6, needs 1000 B); raise the device's workspace option");
    // Each candidate's status: what tells a layout cuDNN lacks from a wrong descriptor.
    const std::vector<AlgoCandidate> failed{{7, false, "CUDNN_STATUS_NOT_SUPPORTED", 0, 0},
                                            {1, false, "CUDNN_STATUS_BAD_PARAM", 0, 0}};
    EXPECT_EQ(choice_error(failed, 1 << 20, "Conv2d backward data (2x3x8x8)"),
              "Conv2d backward data (2x3x8x8): cuDNN offers no usable algorithm (2 candidates, "
              "none with a success status: 7: CUDNN_STATUS_NOT_SUPPORTED, 1: "
              "CUDNN_STATUS_BAD_PARAM)");
    EXPECT_NE(choice_error({}, 1 << 20, "x"), "");
}

// Deterministic mode passes over the algorithms that sum with atomics, whatever their speed.
TEST(CudaPlan, DeterministicAlgorithmChoice) {
    const std::vector<AlgoCandidate> list{
        {0, true, "", 0.1f, 0, false},    // fastest, atomics
        {3, true, "", 0.2f, 100, false},  // atomics
        {1, true, "", 0.3f, 5000, true},  // deterministic, over a small budget
        {5, true, "", 0.4f, 1000, true},
    };
    EXPECT_EQ(choose_algorithm(list, 8000, "Conv2d backward filter"), 0u);
    EXPECT_EQ(choose_algorithm(list, 8000, "Conv2d backward filter", true), 2u);
    EXPECT_EQ(choose_algorithm(list, 2000, "Conv2d backward filter", true), 3u);
    EXPECT_EQ(choice_error(list, 500, "Conv2d backward filter (2x3x8x8)", true),
              "Conv2d backward filter (2x3x8x8): no deterministic algorithm fits the workspace "
              "budget of 500 B (the smallest, algorithm 5, needs 1000 B); raise the device's "
              "workspace option");
    EXPECT_EQ(
        choice_error(std::span(list).first(2), 1 << 20, "Conv2d backward filter (2x3x8x8)", true),
        "Conv2d backward filter (2x3x8x8): cuDNN offers no deterministic algorithm (the "
        "usable ones, 0, 3, sum with atomics); this layer cannot run in deterministic "
        "mode on this GPU");
}

// The nhwc batch-norm kernels' partial sums: (slices + 1) x 2 x channels doubles, a slice per
// 128 rows (8 row lanes x 16 rows a thread), at most 4096 blocks over the 32-channel lanes.
TEST(CudaPlan, BatchNormNhwcScratch) {
    EXPECT_EQ(kernels::bn_nhwc_scratch_doubles(72, 5), (1 + 1) * 2 * 5);
    EXPECT_EQ(kernels::bn_nhwc_scratch_doubles(128 * 28 * 28, 32), (784 + 1) * 2 * 32);
    EXPECT_EQ(kernels::bn_nhwc_scratch_doubles(10'000'000, 64), (2048 + 1) * 2 * 64);
    EXPECT_EQ(kernels::bn_nhwc_scratch_doubles(1, 1), (1 + 1) * 2 * 1);
}

TEST(CudaPlan, LrnLimits) {
    LrnConfig c{1, 8, 2, 2, 5, 1e-4f, 0.75f, 2.f, Layout::contiguous};
    EXPECT_FALSE(lrn_unsupported(c));
    c.size = 1;
    EXPECT_FALSE(lrn_unsupported(c));
    c.size = 4;
    EXPECT_NE(lrn_unsupported(c).value_or("").find("even LRN window"), std::string::npos);
    c.size = 17;
    EXPECT_NE(lrn_unsupported(c).value_or("").find("1 to 16 channels"), std::string::npos);
    c.size = 3;
    c.k = 0;
    EXPECT_NE(lrn_unsupported(c).value_or("").find("k >= 1e-5"), std::string::npos);
    c.k = 1;
    c.beta = 0;
    EXPECT_NE(lrn_unsupported(c).value_or("").find("beta >= 0.01"), std::string::npos);
}

// Our LRN kernel's math (lrn_pixel.h), run on the host pixel by pixel as the GPU's threads run
// it, against the reference kernel: the windows cuDNN cannot do (even, wider than 16 channels
// or than the tensor, tiny k, beta 0) and one it can, in both layouts.
TEST(CudaPlan, OwnLrnKernelMatchesTheReference) {
    const std::vector<LrnConfig> configs{
        {2, 7, 3, 4, 4, 0.8f, 0.75f, 1.5f, Layout::contiguous},
        {2, 20, 3, 2, 17, 0.5f, 0.6f, 2.f, Layout::contiguous},
        {1, 5, 2, 3, 9, 1e-2f, 0.75f, 1.f, Layout::contiguous},
        {2, 6, 2, 2, 3, 0.7f, 0.75f, 0.f, Layout::contiguous},
        {2, 6, 2, 2, 2, 0.7f, 0.f, 1.f, Layout::contiguous},
        {3, 8, 2, 3, 5, 1e-4f, 0.75f, 2.f, Layout::contiguous},
    };
    for (LrnConfig c : configs)
        for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
            c.layout = layout;
            SCOPED_TRACE("size " + std::to_string(c.size) + " k " + std::to_string(c.k) + " beta " +
                         std::to_string(c.beta) +
                         (layout == Layout::channels_last ? " nhwc" : " nchw"));
            Device& host = test_device();
            const Shape shape{c.n, c.c, c.h, c.w};
            auto reference = KernelRegistry::instance().make<LrnKernel>(host, c, "reference");
            const Tensor x = random_tensor(shape, host, 31, -1.5f, 1.5f, layout);
            const Tensor dy = random_tensor(shape, host, 32, -1, 1, layout);
            Tensor none, want_y = Tensor::empty(shape, host, DType::f32, layout);
            Tensor want_dx = Tensor::empty(shape, host, DType::f32, layout);
            reference->forward(x, want_y, none);
            reference->backward(x, dy, none, want_dx);

            const lrn::Shape s{c.n,    c.c,     c.h * c.w, layout == Layout::channels_last,
                               c.size, c.alpha, c.beta,    c.k};
            Tensor y = Tensor::empty(shape, host, DType::f32, layout),
                   dx = Tensor::empty(shape, host, DType::f32, layout);
            std::vector<float> scale(std::size_t(shape.numel()));
            for (std::int64_t p = 0; p < s.pixels(); ++p) {
                const std::int64_t b = s.base(p);
                lrn::forward_pixel(s, x.data<float>() + b, y.data<float>() + b, scale.data() + b);
            }
            for (std::int64_t p = 0; p < s.pixels(); ++p) {
                const std::int64_t b = s.base(p);
                lrn::backward_pixel(s, x.data<float>() + b, dy.data<float>() + b, scale.data() + b,
                                    dx.data<float>() + b);
            }
            expect_near(y.to_vector(), want_y.to_vector(), "forward");
            expect_near(dx.to_vector(), want_dx.to_vector(), "backward");
        }
}

TEST(CudaPlan, BiasedVariance) {
    EXPECT_FLOAT_EQ(unbiased_to_biased(4), 0.75f);
    EXPECT_EQ(unbiased_to_biased(1), 0.f);
}

}  // namespace
}  // namespace tandem::test

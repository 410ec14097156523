// Mixed precision on the GPU (device/precision.h): cuDNN's convolutions and cuBLAS's products
// in fp16 and bf16 against the CPU reference kernels fed the same operands rounded as the GPU's
// read them (cpu::in_precision), every pass, both layouts; the bias and its gradient in float32;
// and which GPUs refuse which precision, and how they say it. The GPU tests skip, saying why,
// without a GPU or on one whose tensor cores lack the precision.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "device/cpu/reference/rounded_operands.h"
#include "device/cuda/cuda_device.h"
#include "support/cuda_parity.h"

namespace tandem::test::cuda_precision {
namespace {

// What one rounding to nearest moves a value by at most, relative to it: half an ulp of the
// precision's significand (11 bits for half, 8 for bfloat16).
double rounding_unit(Precision precision) {
    return precision == Precision::fp16 ? 0x1p-11 : 0x1p-8;
}

// Results written in float32 by products of the same rounded operands (exact in float32) that
// differ from the oracle's only in the order of their float32 sums (cuBLAS's, on tensor cores,
// against the reference's double ones): as test_cuda_layers.cpp allows two float32 kernels.
constexpr double kSumTol = 1e-4;

// Results cuDNN writes in 16 bits: rounded once more than the oracle's (at most one rounding
// unit of the value), and the weight gradient is added into starting values of up to 1, so a
// value may be up to twice the scale of the sum it lands in; float32 sums in another order
// on top. Three units of the output's scale.
double half_result_tolerance(Precision precision) {
    return 3 * rounding_unit(precision);
}

// The largest |got - want| over max(1, max |want|): how far apart two results are, relative to
// the scale of the values.
double largest_difference_to_scale(const Tensor& got, const Tensor& want) {
    const auto g = got.to_vector(), w = want.to_vector();
    EXPECT_EQ(g.size(), w.size());
    double scale = 1, largest = 0;
    for (float v : w) scale = std::max(scale, std::fabs(double(v)));
    for (std::size_t i = 0; i < std::min(g.size(), w.size()); ++i) {
        const double d = std::fabs(double(g[i]) - double(w[i]));
        if (!(d <= largest)) largest = d;  // NaN counts as the largest
    }
    return largest / scale;
}

void expect_near_to_scale(const Tensor& got, const Tensor& want, double tol,
                          const std::string& what) {
    EXPECT_LE(largest_difference_to_scale(got, want), tol) << what;
}

// Why cuda:0 cannot compute in `precision`; empty when it can.
std::string precision_skip_reason(Precision precision) {
    const std::string why = gpu().precision_unavailable(precision);
    if (why.empty()) return {};
    return gpu().name() + " cannot compute in " + std::string(precision_name(precision)) + ": " +
           why;
}

#define TANDEM_REQUIRE_GPU_PRECISION(precision)                                     \
    do {                                                                            \
        TANDEM_REQUIRE_GPUS(1);                                                     \
        if (const std::string why = precision_skip_reason(precision); !why.empty()) \
            GTEST_SKIP() << why;                                                    \
    } while (0)

// The CPU reference kernel for `config`, computing in float32 (fp32) or fed its operands
// rounded to `precision` (the oracle).
template <class K>
std::unique_ptr<K> reference_in(typename K::Config config, Precision precision) {
    config.precision = Precision::fp32;
    return cpu::in_precision<K>(KernelRegistry::instance().make<K>(cpu(), config, "reference"),
                                precision);
}

// What a weighted kernel (Conv2d, Linear) runs on.
struct OperandShapes {
    Shape src, weights, dst;
    std::int64_t bias = 0;  // its length; 0: no bias
    Layout layout = Layout::contiguous;
};

Tensor on(const Tensor& t, Device& device) {
    return t.defined() ? t.to(device) : Tensor();
}

// Every pass of `config` in `precision` on `device` against the oracle: forward, backward data,
// backward weights (adding into non-zero gradients, as the contract says) and both gradients
// at once (`backward`, which narrows diff_dst once), the results within `tolerance` of the
// output's scale; the bias gradient, summed from the float32 incoming gradient, within
// float32's kSumTol of the float32 reference's.
template <class K>
void expect_matches_rounded_reference(Device& device, typename K::Config config,
                                      Precision precision, const OperandShapes& s,
                                      double tolerance) {
    config.precision = precision;
    auto gk = kernel_on<K>(device, config);
    auto oracle = reference_in<K>(config, precision);
    auto exact = reference_in<K>(config, Precision::fp32);
    const Tensor x = random_tensor(s.src, cpu(), 1, -1, 1, s.layout);
    const Tensor w = random_tensor(s.weights, cpu(), 2);
    const Tensor b = s.bias ? random_tensor({s.bias}, cpu(), 3) : Tensor();
    const Tensor dy = random_tensor(s.dst, cpu(), 4, -1, 1, s.layout);
    const Tensor gx = on(x, device), gw = on(w, device), gb = on(b, device), gdy = on(dy, device);

    Tensor y = Tensor::empty(s.dst, cpu(), DType::f32, s.layout);
    Tensor gy = Tensor::empty(s.dst, device, DType::f32, s.layout);
    oracle->forward(x, w, b, y);
    gk->forward(gx, gw, gb, gy);
    expect_near_to_scale(gy, y, tolerance, "forward");

    Tensor dx = Tensor::empty(s.src, cpu(), DType::f32, s.layout);
    Tensor gdx = Tensor::empty(s.src, device, DType::f32, s.layout);
    oracle->backward_data(dy, w, dx);
    gk->backward_data(gdy, gw, gdx);
    expect_near_to_scale(gdx, dx, tolerance, "backward_data");

    const Tensor dw0 = random_tensor(s.weights, cpu(), 5);
    const Tensor db0 = s.bias ? random_tensor({s.bias}, cpu(), 6) : Tensor();
    Tensor dw = dw0.clone(), db = s.bias ? db0.clone() : Tensor();
    oracle->backward_weights(x, dy, dw, db);
    Tensor exact_dw = dw0.clone(), exact_db = s.bias ? db0.clone() : Tensor();
    exact->backward_weights(x, dy, exact_dw, exact_db);
    Tensor gdw = on(dw0, device), gdb = on(db0, device);
    gk->backward_weights(gx, gdy, gdw, gdb);
    expect_near_to_scale(gdw, dw, tolerance, "backward_weights");
    if (s.bias) expect_near_to_scale(gdb, exact_db, kSumTol, "backward bias");

    Tensor both_dx = Tensor::empty(s.src, device, DType::f32, s.layout);
    Tensor both_dw = on(dw0, device), both_db = on(db0, device);
    gk->backward(gx, gdy, gw, both_dx, both_dw, both_db);
    expect_near_to_scale(both_dx, dx, tolerance, "backward: diff_src");
    expect_near_to_scale(both_dw, dw, tolerance, "backward: diff_weights");
    if (s.bias) expect_near_to_scale(both_db, exact_db, kSumTol, "backward: diff_bias");
}

// 3x3 padded, strided without bias, 1x1, grouped, and 5x5 strided over 3 channels (an
// image's first layer); each is run in both layouts.
constexpr Conv2dConfig kConvCases[] = {
    {2, 16, 9, 7, 24, 3, 3, 1, 1, 1, 1, 1, true, Layout::contiguous},
    {2, 8, 11, 10, 16, 3, 3, 2, 2, 1, 1, 1, false, Layout::contiguous},
    {4, 24, 5, 5, 40, 1, 1, 1, 1, 0, 0, 1, true, Layout::contiguous},
    {2, 16, 6, 6, 24, 3, 3, 1, 1, 1, 1, 4, true, Layout::contiguous},
    {2, 3, 11, 11, 16, 5, 5, 2, 2, 2, 2, 1, true, Layout::contiguous},
};

void expect_conv2d_matches_rounded_reference(Device& device, Precision precision, Conv2dConfig c,
                                             Layout layout) {
    c.layout = layout;
    SCOPED_TRACE(std::string(precision_name(precision)) + " " + std::to_string(c.c) + "->" +
                 std::to_string(c.out_channels) + " kernel " + std::to_string(c.kernel_h) +
                 " stride " + std::to_string(c.stride_h) + " groups " + std::to_string(c.groups) +
                 " " + std::string(layout_name(layout)));
    const OperandShapes shapes{{c.n, c.c, c.h, c.w},
                               {c.out_channels, c.c / c.groups, c.kernel_h, c.kernel_w},
                               {c.n, c.out_channels, c.out_h(), c.out_w()},
                               c.bias ? c.out_channels : 0,
                               layout};
    expect_matches_rounded_reference<Conv2dKernel>(device, c, precision, shapes,
                                                   half_result_tolerance(precision));
}

void expect_conv2d_cases_match(Device& device, Precision precision) {
    for (const Conv2dConfig& c : kConvCases)
        for (Layout layout : {Layout::contiguous, Layout::channels_last})
            expect_conv2d_matches_rounded_reference(device, precision, c, layout);
}

// Odd sizes leave the 16-bit copies an odd number of elements; the last is a classifier's.
void expect_linear_cases_match(Precision precision) {
    for (const LinearConfig& c :
         {LinearConfig{1, 10, 3, true}, LinearConfig{5, 37, 13, true},
          LinearConfig{8, 300, 100, false}, LinearConfig{64, 800, 500, true}}) {
        SCOPED_TRACE(std::string(precision_name(precision)) + " n " + std::to_string(c.n) + ", " +
                     std::to_string(c.in_features) + "->" + std::to_string(c.out_features));
        const OperandShapes shapes{{c.n, c.in_features},
                                   {c.out_features, c.in_features},
                                   {c.n, c.out_features},
                                   c.bias ? c.out_features : 0};
        expect_matches_rounded_reference<LinearKernel>(gpu(), c, precision, shapes, kSumTol);
    }
}

TEST(CudaPrecision, Conv2dFp16MatchesRoundedReference) {
    TANDEM_REQUIRE_GPU_PRECISION(Precision::fp16);
    expect_conv2d_cases_match(gpu(), Precision::fp16);
}

TEST(CudaPrecision, Conv2dBf16MatchesRoundedReference) {
    TANDEM_REQUIRE_GPU_PRECISION(Precision::bf16);
    expect_conv2d_cases_match(gpu(), Precision::bf16);
}

// The algorithms chosen by timing (cudnnFind*Ex on scratch operands of the 16-bit type) and
// the deterministic ones compute the same.
TEST(CudaPrecision, Conv2dFp16WithTimedAndDeterministicAlgorithms) {
    TANDEM_REQUIRE_GPU_PRECISION(Precision::fp16);
    CudaDeviceOptions timed;
    timed.benchmark = true;
    const std::shared_ptr<Device> benchmark = own_cuda_device(timed);
    const std::shared_ptr<Device> deterministic = own_cuda_device();
    deterministic->set_deterministic(true);
    for (Device* device : {benchmark.get(), deterministic.get()})
        for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
            SCOPED_TRACE(device == benchmark.get() ? "timed" : "deterministic");
            expect_conv2d_matches_rounded_reference(*device, Precision::fp16, kConvCases[0],
                                                    layout);
        }
}

TEST(CudaPrecision, LinearFp16MatchesRoundedReference) {
    TANDEM_REQUIRE_GPU_PRECISION(Precision::fp16);
    expect_linear_cases_match(Precision::fp16);
}

TEST(CudaPrecision, LinearBf16MatchesRoundedReference) {
    TANDEM_REQUIRE_GPU_PRECISION(Precision::bf16);
    expect_linear_cases_match(Precision::bf16);
}

// ... and those comparisons see the rounding: fp16 moves a product's sum by about half a
// rounding unit of its scale (sums of 64 products over 16384 outputs), far more than the GPU
// differs from its oracle, and no more than rounding the operands explains (bfloat16's
// rounding, eight times half's, would break the upper bound). A kernel computing in float32
// unasked differs from float32 by sums' order alone and fails the lower bound.
TEST(CudaPrecision, Fp16DiffersFromFloat32AsRoundingDoes) {
    TANDEM_REQUIRE_GPU_PRECISION(Precision::fp16);
    const double unit = rounding_unit(Precision::fp16);
    {
        LinearConfig c{64, 64, 256, false};
        const Tensor x = random_tensor({64, 64}, cpu(), 21),
                     w = random_tensor({256, 64}, cpu(), 22);
        Tensor half = Tensor::empty({64, 256}, gpu()), want = Tensor::empty({64, 256}, cpu()),
               full = Tensor::empty({64, 256}, cpu());
        reference_in<LinearKernel>(c, Precision::fp16)->forward(x, w, Tensor(), want);
        reference_in<LinearKernel>(c, Precision::fp32)->forward(x, w, Tensor(), full);
        c.precision = Precision::fp16;
        kernel_on<LinearKernel>(gpu(), c)->forward(x.to(gpu()), w.to(gpu()), Tensor(), half);
        EXPECT_LE(largest_difference_to_scale(half, want), unit / 20) << "Linear, its oracle";
        const double from_float = largest_difference_to_scale(half, full);
        EXPECT_GT(from_float, unit / 5) << "Linear, float32";
        EXPECT_LT(from_float, 2 * unit) << "Linear, float32";
    }
    // A convolution's outputs are rounded to half once more, which moves them by up to a unit.
    Conv2dConfig c{4, 32, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, false, Layout::channels_last};
    const Tensor x = random_tensor({4, 32, 8, 8}, cpu(), 23, -1, 1, Layout::channels_last);
    const Tensor w = random_tensor({32, 32, 3, 3}, cpu(), 24);
    Tensor full = Tensor::empty({4, 32, 8, 8}, cpu(), DType::f32, Layout::channels_last);
    Tensor half = Tensor::empty({4, 32, 8, 8}, gpu(), DType::f32, Layout::channels_last);
    reference_in<Conv2dKernel>(c, Precision::fp32)->forward(x, w, Tensor(), full);
    c.precision = Precision::fp16;
    kernel_on<Conv2dKernel>(gpu(), c)->forward(x.to(gpu()), w.to(gpu()), Tensor(), half);
    const double from_float = largest_difference_to_scale(half, full);
    EXPECT_GT(from_float, unit / 5) << "Conv2d, float32";
    EXPECT_LT(from_float, 3 * unit) << "Conv2d, float32";
}

// What GPUs absent here say (no GPU needed): the compute capability each precision's tensor
// cores need, and tf32 pointed to the device option that gives it.
TEST(CudaPrecision, RefusalsNameTheGpuAndWhatItLacks) {
    using P = Precision;
    for (P p : {P::fp32, P::fp16, P::bf16}) {
        EXPECT_EQ(gpu_precision_unavailable(p, "cuda:0", "NVIDIA A100-SXM4-80GB", 8, 0), "");
        EXPECT_EQ(gpu_precision_unavailable(p, "cuda:1", "NVIDIA H100 80GB HBM3", 9, 0), "");
    }
    EXPECT_EQ(gpu_precision_unavailable(P::fp16, "cuda:0", "Tesla V100-SXM2-16GB", 7, 0), "");
    EXPECT_EQ(gpu_precision_unavailable(P::fp16, "cuda:0", "Tesla T4", 7, 5), "");
    EXPECT_EQ(gpu_precision_unavailable(P::bf16, "cuda:0", "Tesla V100-SXM2-16GB", 7, 0),
              "cuda:0 (Tesla V100-SXM2-16GB, compute capability 7.0) has no bfloat16 tensor "
              "cores (8.0 or later: A100, H100)");
    EXPECT_EQ(gpu_precision_unavailable(P::bf16, "cuda:2", "Tesla T4", 7, 5),
              "cuda:2 (Tesla T4, compute capability 7.5) has no bfloat16 tensor cores (8.0 or "
              "later: A100, H100)");
    EXPECT_EQ(gpu_precision_unavailable(P::fp16, "cuda:0", "Tesla P100-PCIE-16GB", 6, 0),
              "cuda:0 (Tesla P100-PCIE-16GB, compute capability 6.0) has no float16 tensor "
              "cores (7.0 or later: V100, T4, A100, H100)");
    EXPECT_EQ(gpu_precision_unavailable(P::tf32, "cuda:0", "NVIDIA H100 80GB HBM3", 9, 0),
              "TF32 tensor cores are the cuda device's tf32 option (T.devices('cuda', n, "
              "{tf32 = true})), not a precision of the layers");
}

// The device answers for its own GPU, and a kernel asked for what it refuses is not built:
// tf32 everywhere, with the device's answer in the error.
TEST(CudaPrecision, DeviceAnswersForItsGpu) {
    TANDEM_REQUIRE_GPUS(1);
    auto& device = dynamic_cast<CudaDevice&>(gpu());
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
        EXPECT_EQ(device.precision_unavailable(p),
                  gpu_precision_unavailable(p, device.name(), device.gpu_name(),
                                            device.capability_major(), device.capability_minor()))
            << precision_name(p);
    EXPECT_FALSE(device.gpu_name().empty());
    EXPECT_GT(device.capability_major(), 0) << "no compute capability read";
    LinearConfig c{4, 8, 3, true};
    c.precision = Precision::tf32;
    try {
        kernel_on<LinearKernel>(device, c);
        ADD_FAILURE() << "a tf32 kernel was built";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("cannot compute in tf32: TF32 tensor cores are the "
                                             "cuda device's tf32 option"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace tandem::test::cuda_precision

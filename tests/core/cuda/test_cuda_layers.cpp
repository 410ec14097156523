// Every CUDA kernel against the CPU backend's, forward and backward, on random data, in both
// layouts where the kind has them. Skipped, saying why, without a GPU.
#include <array>
#include <cstring>
#include <limits>

#include "device/cuda/cuda_backend.h"
#include "kernels/kernel_cache.h"
#include "layers/cross_entropy.h"
#include "support/cuda_parity.h"

namespace tandem::test {
namespace {

constexpr double kLayerTol = 1e-4;
// Results summed over thousands of products whose partial sums reach tens: two algorithms'
// orders of summation differ by up to about 1e-4 of those (2.2e-4 seen on an H200, weight
// gradients of a 3x3 convolution over 16 x 28 x 28 positions).
constexpr double kSumTol = 2e-3;

TEST(CudaLayers, Conv2d) {
    TANDEM_REQUIRE_GPUS(1);
    for (Layout layout : {Layout::contiguous, Layout::channels_last})
        for (std::int64_t groups : {1, 2}) {
            const Conv2dConfig c{2, 4, 9, 7, 6, 3, 3, 2, 1, 1, 1, groups, true, layout};
            SCOPED_TRACE(std::string(layout_name(layout)) + " groups " + std::to_string(groups));
            auto ck = kernel_on<Conv2dKernel>(cpu(), c);
            auto gk = kernel_on<Conv2dKernel>(gpu(), c);
            const Tensor x = random_tensor({2, 4, 9, 7}, cpu(), 1, -1, 1, layout);
            const Tensor w = random_tensor({6, 4 / groups, 3, 3}, cpu(), 2);
            const Tensor b = random_tensor({6}, cpu(), 3);
            const Shape out{2, 6, c.out_h(), c.out_w()};
            const Tensor dy = random_tensor(out, cpu(), 4, -1, 1, layout);
            Tensor y = Tensor::empty(out, cpu(), DType::f32, layout);
            Tensor gy = Tensor::empty(out, gpu(), DType::f32, layout);
            ck->forward(x, w, b, y);
            gk->forward(x.to(gpu()), w.to(gpu()), b.to(gpu()), gy);
            expect_near(gy, y, kLayerTol, "forward");

            Tensor dx = Tensor::empty(x.shape(), cpu(), DType::f32, layout);
            Tensor gdx = Tensor::empty(x.shape(), gpu(), DType::f32, layout);
            ck->backward_data(dy, w, dx);
            gk->backward_data(dy.to(gpu()), w.to(gpu()), gdx);
            expect_near(gdx, dx, kLayerTol, "backward_data");

            // Both add into the same non-zero gradients.
            Tensor dw = random_tensor(w.shape(), cpu(), 5), db = random_tensor({6}, cpu(), 6);
            Tensor gdw = dw.to(gpu()), gdb = db.to(gpu());
            ck->backward_weights(x, dy, dw, db);
            gk->backward_weights(x.to(gpu()), dy.to(gpu()), gdw, gdb);
            expect_near(gdw, dw, kLayerTol, "backward_weights");
            expect_near(gdb, db, kLayerTol, "backward bias");
        }
}

// A device in deterministic mode: the gradients repeat bit for bit on a shape where cuDNN's
// heuristics may rank an atomics algorithm first, and a kernel built before the mode was turned
// on chooses again (the same results within tolerance, deterministic from then on).
TEST(CudaLayers, Conv2dInDeterministicMode) {
    TANDEM_REQUIRE_GPUS(1);
    const std::shared_ptr<Device> device = own_cuda_device();
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        SCOPED_TRACE(layout_name(layout));
        device->set_deterministic(false);
        const Conv2dConfig c{16, 32, 28, 28, 32, 3, 3, 1, 1, 1, 1, 1, true, layout};
        auto k = kernel_on<Conv2dKernel>(*device, c);
        const Shape in{16, 32, 28, 28}, out{16, 32, 28, 28};
        const Tensor x = random_tensor(in, cpu(), 1, -1, 1, layout).to(*device);
        const Tensor w = random_tensor({32, 32, 3, 3}, cpu(), 2).to(*device);
        const Tensor dy = random_tensor(out, cpu(), 3, -1, 1, layout).to(*device);
        auto gradients = [&] {
            Tensor dx = Tensor::empty(in, *device, DType::f32, layout);
            Tensor dw = Tensor::zeros({32, 32, 3, 3}, *device), db = Tensor::zeros({32}, *device);
            k->backward_data(dy, w, dx);
            k->backward_weights(x, dy, dw, db);
            return std::array{dx.to_vector(), dw.to_vector(), db.to_vector()};
        };
        const auto before = gradients();
        device->set_deterministic(true);
        const auto first = gradients();
        for (std::size_t i = 0; i < first.size(); ++i)
            expect_near(Tensor::from_vector({std::int64_t(first[i].size())}, cpu(), first[i]),
                        Tensor::from_vector({std::int64_t(before[i].size())}, cpu(), before[i]),
                        kSumTol, "gradient " + std::to_string(i));
        for (int repeat = 0; repeat < 3; ++repeat)
            EXPECT_EQ(gradients(), first) << "repeat " << repeat;
    }
}

// A device with TF32 tensor cores allowed: convolution (every pass, both layouts) and Linear
// still compute the CPU's results, to TF32's precision (10-bit mantissas in the products).
TEST(CudaLayers, Tf32) {
    TANDEM_REQUIRE_GPUS(1);
    CudaDeviceOptions options;
    options.tf32 = true;
    const std::shared_ptr<Device> device = own_cuda_device(options);
    constexpr double kTf32Tol = 1e-2;
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        SCOPED_TRACE(layout_name(layout));
        const Conv2dConfig c{8, 16, 12, 12, 24, 3, 3, 1, 1, 1, 1, 1, true, layout};
        auto ck = kernel_on<Conv2dKernel>(cpu(), c);
        auto gk = kernel_on<Conv2dKernel>(*device, c);
        const Shape in{8, 16, 12, 12}, out{8, 24, 12, 12};
        const Tensor x = random_tensor(in, cpu(), 41, -1, 1, layout),
                     w = random_tensor({24, 16, 3, 3}, cpu(), 42);
        const Tensor b = random_tensor({24}, cpu(), 43),
                     dy = random_tensor(out, cpu(), 44, -1, 1, layout);
        Tensor y = Tensor::empty(out, cpu(), DType::f32, layout),
               gy = Tensor::empty(out, *device, DType::f32, layout);
        ck->forward(x, w, b, y);
        gk->forward(x.to(*device), w.to(*device), b.to(*device), gy);
        expect_near(gy, y, kTf32Tol, "forward");
        Tensor dx = Tensor::empty(in, cpu(), DType::f32, layout),
               gdx = Tensor::empty(in, *device, DType::f32, layout);
        ck->backward_data(dy, w, dx);
        gk->backward_data(dy.to(*device), w.to(*device), gdx);
        expect_near(gdx, dx, kTf32Tol, "backward_data");
        Tensor dw = Tensor::zeros(w.shape(), cpu()), db = Tensor::zeros({24}, cpu());
        Tensor gdw = dw.to(*device), gdb = db.to(*device);
        ck->backward_weights(x, dy, dw, db);
        gk->backward_weights(x.to(*device), dy.to(*device), gdw, gdb);
        expect_near(gdw, dw, kTf32Tol, "backward_weights");
        expect_near(gdb, db, kTf32Tol, "backward bias");
    }
    const LinearConfig c{16, 96, 40, true};
    auto ck = kernel_on<LinearKernel>(cpu(), c);
    auto gk = kernel_on<LinearKernel>(*device, c);
    const Tensor x = random_tensor({16, 96}, cpu(), 45), w = random_tensor({40, 96}, cpu(), 46);
    const Tensor b = random_tensor({40}, cpu(), 47);
    Tensor y = Tensor::empty({16, 40}, cpu()), gy = Tensor::empty({16, 40}, *device);
    ck->forward(x, w, b, y);
    gk->forward(x.to(*device), w.to(*device), b.to(*device), gy);
    expect_near(gy, y, kTf32Tol, "Linear forward");
}

TEST(CudaLayers, BatchNorm) {
    TANDEM_REQUIRE_GPUS(1);
    // The second shape spans several blocks of channel lanes (the last one partly filled) and
    // several slices of rows in the nhwc kernels' sums.
    for (const Shape& shape : {Shape{3, 5, 4, 6}, Shape{8, 40, 12, 12}})
        for (Layout layout : {Layout::contiguous, Layout::channels_last})
            for (bool training : {true, false}) {
                SCOPED_TRACE(shape.to_string() + " " + std::string(layout_name(layout)) +
                             (training ? " train" : " eval"));
                const std::int64_t ch = shape[1];
                const BatchNormConfig c{shape[0], ch, shape[2], shape[3], 1e-5f, training, layout};
                auto ck = kernel_on<BatchNormKernel>(cpu(), c);
                auto gk = kernel_on<BatchNormKernel>(gpu(), c);
                const Tensor x = random_tensor(shape, cpu(), 7, -2, 3, layout);
                const Tensor dy = random_tensor(x.shape(), cpu(), 8, -1, 1, layout);
                const Tensor gamma = random_tensor({ch}, cpu(), 9, 0.5f, 1.5f);
                const Tensor beta = random_tensor({ch}, cpu(), 10);
                Tensor mean = random_tensor({ch}, cpu(), 11),
                       var = random_tensor({ch}, cpu(), 12, 0.5f, 2);
                Tensor gmean = mean.to(gpu()), gvar = var.to(gpu());
                Tensor y = Tensor::empty(x.shape(), cpu(), DType::f32, layout);
                Tensor gy = Tensor::empty(x.shape(), gpu(), DType::f32, layout);
                ck->forward(x, gamma, beta, mean, var, y);
                gk->forward(x.to(gpu()), gamma.to(gpu()), beta.to(gpu()), gmean, gvar, gy);
                expect_near(gy, y, kLayerTol, "forward");
                expect_near(gmean, mean, kLayerTol, "mean");
                expect_near(gvar, var, kLayerTol, "variance (biased)");

                Tensor dx = Tensor::empty(x.shape(), cpu(), DType::f32, layout);
                Tensor gdx = Tensor::empty(x.shape(), gpu(), DType::f32, layout);
                Tensor dg = random_tensor({ch}, cpu(), 13), dbeta = random_tensor({ch}, cpu(), 14);
                Tensor gdg = dg.to(gpu()), gdbeta = dbeta.to(gpu());
                ck->backward(x, dy, gamma, mean, var, dx, dg, dbeta);
                gk->backward(x.to(gpu()), dy.to(gpu()), gamma.to(gpu()), gmean, gvar, gdx, gdg,
                             gdbeta);
                expect_near(gdx, dx, 5 * kLayerTol, "diff_src");
                expect_near(gdg, dg, 5 * kLayerTol, "diff_gamma");
                expect_near(gdbeta, dbeta, kLayerTol, "diff_beta");

                // The same inputs give the same bits: the sums have a fixed order.
                Tensor again = Tensor::empty(x.shape(), gpu(), DType::f32, layout);
                Tensor gdg2 = Tensor::zeros({ch}, gpu()), gdbeta2 = Tensor::zeros({ch}, gpu());
                Tensor gdg1 = Tensor::zeros({ch}, gpu()), gdbeta1 = Tensor::zeros({ch}, gpu());
                gk->backward(x.to(gpu()), dy.to(gpu()), gamma.to(gpu()), gmean, gvar, gdx, gdg1,
                             gdbeta1);
                gk->backward(x.to(gpu()), dy.to(gpu()), gamma.to(gpu()), gmean, gvar, again, gdg2,
                             gdbeta2);
                EXPECT_EQ(again.to_vector(), gdx.to_vector());
                EXPECT_EQ(gdg2.to_vector(), gdg1.to_vector());
                EXPECT_EQ(gdbeta2.to_vector(), gdbeta1.to_vector());
            }
}

// Every activation, both layouts, and a 2-D (fully connected) shape; backward from what the
// layer keeps (forward's output or its input).
TEST(CudaLayers, Activation) {
    TANDEM_REQUIRE_GPUS(1);
    using A = ActivationAlgorithm;
    for (A a : {A::relu, A::leaky_relu, A::sigmoid, A::tanh, A::gelu_erf, A::gelu_tanh})
        for (const auto& [shape, layout] : {std::pair{Shape{4, 3, 5, 5}, Layout::contiguous},
                                            std::pair{Shape{4, 3, 5, 5}, Layout::channels_last},
                                            std::pair{Shape{6, 7}, Layout::contiguous}}) {
            const ActivationConfig c{shape, layout, a, a == A::leaky_relu ? 0.2f : 0.f};
            SCOPED_TRACE(std::string(activation_name(a)) + " " + std::string(layout_name(layout)) +
                         " " + std::to_string(shape.rank()) + "-D");
            auto ck = kernel_on<ActivationKernel>(cpu(), c);
            auto gk = kernel_on<ActivationKernel>(gpu(), c);
            const Tensor x = random_tensor(shape, cpu(), 15, -3, 3, layout);
            const Tensor dy = random_tensor(shape, cpu(), 16, -1, 1, layout);
            Tensor y = Tensor::empty(shape, cpu(), DType::f32, layout);
            Tensor gy = Tensor::empty(shape, gpu(), DType::f32, layout);
            ck->forward(x, y);
            gk->forward(x.to(gpu()), gy);
            expect_near(gy, y, 1e-5, "forward");
            const bool from_dst = activation_backward_uses_dst(a);
            Tensor dx = Tensor::empty(shape, cpu(), DType::f32, layout);
            Tensor gdx = Tensor::empty(shape, gpu(), DType::f32, layout);
            ck->backward(from_dst ? y : x, dy, dx);
            gk->backward(from_dst ? gy : x.to(gpu()), dy.to(gpu()), gdx);
            expect_near(gdx, dx, 1e-5, "backward");
        }
}

TEST(CudaLayers, Pool2d) {
    TANDEM_REQUIRE_GPUS(1);
    // {channels, kernel, stride, pad}: overlapping padded windows on 3 channels, and VGG's
    // tiling 2x2 windows on 17 (channels-last threads run along the channels).
    const int shapes[][4] = {{3, 3, 2, 1}, {17, 2, 2, 0}};
    for (const auto& [channels, kernel, stride, pad] : shapes)
        for (Layout layout : {Layout::contiguous, Layout::channels_last})
            for (PoolKind kind : {PoolKind::max, PoolKind::average})
                for (bool ceil : {false, true})
                    for (bool include_pad : {false, true}) {
                        const Pool2dConfig c{kind,   2,      channels,    7,      8,
                                             kernel, kernel, stride,      stride, pad,
                                             pad,    ceil,   include_pad, layout};
                        SCOPED_TRACE(std::string(layout_name(layout)) +
                                     (kind == PoolKind::max ? " max" : " avg") +
                                     (ceil ? " ceil" : "") + (include_pad ? " include_pad " : " ") +
                                     std::to_string(channels) + " channels");
                        auto ck = kernel_on<Pool2dKernel>(cpu(), c);
                        auto gk = kernel_on<Pool2dKernel>(gpu(), c);
                        const Shape out{2, channels, c.out_h(), c.out_w()};
                        const Tensor x =
                            random_tensor({2, channels, 7, 8}, cpu(), 17, -1, 1, layout);
                        const Tensor dy = random_tensor(out, cpu(), 18, -1, 1, layout);
                        Tensor ws =
                            Tensor::empty({std::int64_t(ck->workspace_bytes())}, cpu(), DType::u8);
                        Tensor gws =
                            Tensor::empty({std::int64_t(gk->workspace_bytes())}, gpu(), DType::u8);
                        Tensor y = Tensor::empty(out, cpu(), DType::f32, layout);
                        Tensor gy = Tensor::empty(out, gpu(), DType::f32, layout);
                        ck->forward(x, y, ws);
                        gk->forward(x.to(gpu()), gy, gws);
                        expect_near(gy, y, kLayerTol, "forward");
                        Tensor dx = Tensor::empty(x.shape(), cpu(), DType::f32, layout);
                        Tensor gdx = Tensor::empty(x.shape(), gpu(), DType::f32, layout);
                        ck->backward(dy, ws, dx);
                        gk->backward(dy.to(gpu()), gws, gdx);
                        expect_near(gdx, dx, kLayerTol, "backward");
                    }
}

// cuDNN's window (size 5) and ones only our kernel runs: even, wider than 16 channels, tiny k;
// against the CPU's reference kernel, which defines PyTorch's window for every size.
TEST(CudaLayers, Lrn) {
    TANDEM_REQUIRE_GPUS(1);
    for (const LrnConfig& base : {LrnConfig{2, 7, 3, 4, 5, 0.8f, 0.75f, 1.5f, Layout::contiguous},
                                  LrnConfig{2, 7, 3, 4, 4, 0.8f, 0.75f, 1.5f, Layout::contiguous},
                                  LrnConfig{2, 24, 3, 2, 19, 0.5f, 0.6f, 2.f, Layout::contiguous},
                                  LrnConfig{2, 6, 3, 4, 3, 0.7f, 0.75f, 0.f, Layout::contiguous}})
        for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
            LrnConfig c = base;
            c.layout = layout;
            SCOPED_TRACE(std::string(layout_name(layout)) + " size " + std::to_string(c.size) +
                         " k " + std::to_string(c.k));
            const Shape shape{c.n, c.c, c.h, c.w};
            // The reference kernel: oneDNN's window differs from PyTorch's for even sizes (which
            // nn.LRN refuses, but our GPU kernel computes as PyTorch does).
            auto ck = KernelRegistry::instance().make<LrnKernel>(cpu(), c, "reference");
            auto gk = kernel_on<LrnKernel>(gpu(), c);
            const Tensor x = random_tensor(shape, cpu(), 19, -1.5f, 1.5f, layout);
            const Tensor dy = random_tensor(shape, cpu(), 20, -1, 1, layout);
            Tensor ws = Tensor::empty({std::int64_t(ck->workspace_bytes())}, cpu(), DType::u8);
            Tensor gws = Tensor::empty({std::int64_t(gk->workspace_bytes())}, gpu(), DType::u8);
            Tensor y = Tensor::empty(shape, cpu(), DType::f32, layout);
            Tensor gy = Tensor::empty(shape, gpu(), DType::f32, layout);
            ck->forward(x, y, ws);
            gk->forward(x.to(gpu()), gy, gws);
            expect_near(gy, y, kLayerTol, "forward");
            Tensor dx = Tensor::empty(shape, cpu(), DType::f32, layout);
            Tensor gdx = Tensor::empty(shape, gpu(), DType::f32, layout);
            ck->backward(x, dy, ws, dx);
            gk->backward(x.to(gpu()), dy.to(gpu()), gws, gdx);
            expect_near(gdx, dx, kLayerTol, "backward");
            Tensor none;  // evaluation: no workspace
            gk->forward(x.to(gpu()), gy, none);
            expect_near(gy, y, kLayerTol, "evaluation forward");
        }
}

TEST(CudaLayers, Linear) {
    TANDEM_REQUIRE_GPUS(1);
    const LinearConfig c{5, 33, 17, true};
    auto ck = kernel_on<LinearKernel>(cpu(), c);
    auto gk = kernel_on<LinearKernel>(gpu(), c);
    const Tensor x = random_tensor({5, 33}, cpu(), 21), w = random_tensor({17, 33}, cpu(), 22);
    const Tensor b = random_tensor({17}, cpu(), 23), dy = random_tensor({5, 17}, cpu(), 24);
    Tensor y = Tensor::empty({5, 17}, cpu()), gy = Tensor::empty({5, 17}, gpu());
    ck->forward(x, w, b, y);
    gk->forward(x.to(gpu()), w.to(gpu()), b.to(gpu()), gy);
    expect_near(gy, y, kLayerTol, "forward");
    Tensor dx = Tensor::empty({5, 33}, cpu()), gdx = Tensor::empty({5, 33}, gpu());
    ck->backward_data(dy, w, dx);
    gk->backward_data(dy.to(gpu()), w.to(gpu()), gdx);
    expect_near(gdx, dx, kLayerTol, "backward_data");
    Tensor dw = random_tensor({17, 33}, cpu(), 25), db = random_tensor({17}, cpu(), 26);
    Tensor gdw = dw.to(gpu()), gdb = db.to(gpu());
    ck->backward_weights(x, dy, dw, db);
    gk->backward_weights(x.to(gpu()), dy.to(gpu()), gdw, gdb);
    expect_near(gdw, dw, kLayerTol, "backward_weights (accumulated)");
    expect_near(gdb, db, kLayerTol, "bias gradient (accumulated)");
}

// The very mask the CPU draws, in both layouts, and for a micro-batch offset (`first`).
TEST(CudaLayers, DropoutMasksMatchTheCpu) {
    TANDEM_REQUIRE_GPUS(1);
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        SCOPED_TRACE(layout_name(layout));
        const Shape shape{3, 4, 5, 6};
        const DropoutConfig c{shape.numel()};
        auto ck = kernel_on<DropoutKernel>(cpu(), c);
        auto gk = kernel_on<DropoutKernel>(gpu(), c);
        const Tensor x = random_tensor(shape, cpu(), 27, -1, 1, layout);
        const Tensor dy = random_tensor(shape, cpu(), 28, -1, 1, layout);
        Tensor m = Tensor::empty(shape, cpu(), DType::u8, layout);
        Tensor gm = Tensor::empty(shape, gpu(), DType::u8, layout);
        Tensor y = Tensor::empty(shape, cpu(), DType::f32, layout);
        Tensor gy = Tensor::empty(shape, gpu(), DType::f32, layout);
        ck->forward(x, 0.3f, 1234, 360, m, y);
        gk->forward(x.to(gpu()), 0.3f, 1234, 360, gm, gy);
        expect_near(gy, y, 0, "forward (same mask, same scale)");
        std::vector<unsigned char> host(std::size_t(shape.numel()));
        gpu().copy_to_host(host.data(), gm.raw(), host.size());
        EXPECT_EQ(0, std::memcmp(host.data(), m.data<unsigned char>(), host.size())) << "mask";
        Tensor dx = Tensor::empty(shape, cpu(), DType::f32, layout);
        Tensor gdx = Tensor::empty(shape, gpu(), DType::f32, layout);
        ck->backward(dy, m, 0.3f, dx);
        gk->backward(dy.to(gpu()), gm, 0.3f, gdx);
        expect_near(gdx, dx, 0, "backward");
    }
}

TEST(CudaLayers, SoftmaxCrossEntropy) {
    TANDEM_REQUIRE_GPUS(1);
    const SoftmaxCrossEntropyConfig c{6, 10};
    auto ck = kernel_on<SoftmaxCrossEntropyKernel>(cpu(), c);
    auto gk = kernel_on<SoftmaxCrossEntropyKernel>(gpu(), c);
    const Tensor x = random_tensor({6, 10}, cpu(), 29, -4, 4);
    Tensor labels = Tensor::empty({6}, cpu(), DType::i32);
    for (int i = 0; i < 6; ++i) labels.data<int>()[i] = (i * 7) % 10;
    for (float smoothing : {0.f, 0.1f}) {
        Tensor p = Tensor::empty({6, 10}, cpu()), gp = Tensor::empty({6, 10}, gpu());
        const LossSums want = ck->forward(x, labels, smoothing, p);
        const LossSums got = gk->forward(x.to(gpu()), labels.to(gpu()), smoothing, gp);
        EXPECT_NEAR(got.loss, want.loss, 1e-4 * std::max(1.0, want.loss));
        EXPECT_EQ(got.correct, want.correct);
        EXPECT_EQ(got.count, want.count);
        expect_near(gp, p, kLayerTol, "probabilities");
        Tensor dx = Tensor::empty({6, 10}, cpu()), gdx = Tensor::empty({6, 10}, gpu());
        ck->backward(p, labels, smoothing, 0.5f, dx);
        gk->backward(gp, labels.to(gpu()), smoothing, 0.5f, gdx);
        expect_near(gdx, dx, kLayerTol, "diff_logits");
    }
    labels.data<int>()[4] = 10;
    Tensor gp = Tensor::empty({6, 10}, gpu());
    try {
        gk->forward(x.to(gpu()), labels.to(gpu()), 0.f, gp);
        ADD_FAILURE() << "an out-of-range label was accepted";
    } catch (const DataError& e) {
        EXPECT_EQ(std::string(e.what()), "label 10 of sample 5 is outside [0, 10)");
    }
}

TEST(CudaLayers, ElementLosses) {
    TANDEM_REQUIRE_GPUS(1);
    for (ElementLossKind kind : {ElementLossKind::mse, ElementLossKind::bce_with_logits}) {
        const ElementLossConfig c{kind, 5, 12};
        auto ck = kernel_on<ElementLossKernel>(cpu(), c);
        auto gk = kernel_on<ElementLossKernel>(gpu(), c);
        const Tensor y = random_tensor({5, 12}, cpu(), 41, -30, 30),
                     t = random_tensor({5, 12}, cpu(), 42, 0, 1);
        const LossSums want = ck->forward(y, t), got = gk->forward(y.to(gpu()), t.to(gpu()));
        EXPECT_NEAR(got.loss, want.loss, 1e-5 * std::max(1.0, want.loss));
        EXPECT_EQ(got.correct, want.correct);
        EXPECT_EQ(got.count, want.count);
        Tensor dy = Tensor::empty({5, 12}, cpu()), gdy = Tensor::empty({5, 12}, gpu());
        ck->backward(y, t, 0.2f, dy);
        gk->backward(y.to(gpu()), t.to(gpu()), 0.2f, gdy);
        expect_near(gdy, dy, kLayerTol, "element loss gradient");
    }
}

TEST(CudaLayers, TensorOps) {
    TANDEM_REQUIRE_GPUS(1);
    TensorOpsKernel& c = tensor_ops(cpu());
    TensorOpsKernel& g = tensor_ops(gpu());
    const Shape s{2, 3, 4, 5};
    const Tensor a = random_tensor(s, cpu(), 30), b = random_tensor(s, cpu(), 31);
    Tensor z = Tensor::empty(s, cpu()), gz = Tensor::empty(s, gpu());
    c.add(a, b, z);
    g.add(a.to(gpu()), b.to(gpu()), gz);
    expect_near(gz, z, 0, "add");
    c.add_relu(a, b, z);
    g.add_relu(a.to(gpu()), b.to(gpu()), gz);
    expect_near(gz, z, 0, "add_relu");
    c.add(a, b, z);
    g.add(a.to(gpu()), b.to(gpu()), gz);
    c.accumulate(z, a);
    g.accumulate(gz, a.to(gpu()));
    expect_near(gz, z, 0, "accumulate");
    c.scale(z, 0.25f);
    g.scale(gz, 0.25f);
    expect_near(gz, z, 0, "scale");
    c.blend(z, 0.75f, b, 0.5f);
    g.blend(gz, 0.75f, b.to(gpu()), 0.5f);
    expect_near(gz, z, 1e-6, "blend");
    EXPECT_NEAR(g.sum_squares(gz), c.sum_squares(z), 1e-9 * c.sum_squares(z));
    {  // loss scaling's unscale: the same quotients, and a non-finite value found on the GPU
        Tensor ga = a.to(gpu());
        Tensor c_copy = z.clone(), g_copy = gz.clone();
        EXPECT_TRUE(c.unscale({&c_copy}, 0.125f));
        EXPECT_TRUE(g.unscale({&g_copy, &ga}, 0.125f));
        expect_near(g_copy, c_copy, 0, "unscale");
        std::vector<float> with_nan(std::size_t(s.numel()), 1.f);
        with_nan[17] = std::numeric_limits<float>::quiet_NaN();
        Tensor bad = Tensor::from_vector(s, cpu(), with_nan).to(gpu());
        EXPECT_FALSE(g.unscale({&ga, &bad}, 0.5f));
    }
    c.fill(z, 3.f);
    g.fill(gz, 3.f);
    expect_near(gz, z, 0, "fill");
    // Layout copies both ways.
    Tensor nhwc = Tensor::empty(s, gpu(), DType::f32, Layout::channels_last);
    g.copy(a.to(gpu()), nhwc);
    expect_near(nhwc, a, 0, "copy to channels_last");
    Tensor back = Tensor::empty(s, gpu());
    g.copy(nhwc, back);
    expect_near(back, a, 0, "copy back");
    // SGD with momentum and Nesterov, two steps.
    const SgdHyper h{0.1f, 0.9f, 0.f, 5e-4f, true};
    Tensor w = random_tensor(s, cpu(), 32), buf = Tensor::zeros(s, cpu());
    Tensor gw = w.to(gpu()), gbuf = buf.to(gpu());
    for (int step = 0; step < 2; ++step) {
        c.sgd_update(w, b, buf, h, step == 0);
        g.sgd_update(gw, b.to(gpu()), gbuf, h, step == 0);
    }
    expect_near(gw, w, 1e-6, "sgd weights");
    expect_near(gbuf, buf, 1e-6, "sgd momentum");
    // AdamW, two steps (the bias corrections of t = 1 and 2).
    Tensor m = Tensor::zeros(s, cpu()), v = Tensor::zeros(s, cpu());
    Tensor gm = m.to(gpu()), gv = v.to(gpu());
    for (int t = 1; t <= 2; ++t) {
        AdamHyper a;
        a.lr = 0.01f, a.beta1 = 0.9f, a.beta2 = 0.999f, a.eps = 1e-8f, a.weight_decay = 0.01f,
        a.decoupled = true;
        a.step_size = a.lr / (1.f - std::pow(a.beta1, float(t)));
        a.bias_correction2_sqrt = std::sqrt(1.f - std::pow(a.beta2, float(t)));
        c.adam_update(w, b, m, v, a);
        g.adam_update(gw, b.to(gpu()), gm, gv, a);
    }
    expect_near(gw, w, 1e-6, "adam weights");
    expect_near(gm, m, 1e-6, "adam exp_avg");
    expect_near(gv, v, 1e-6, "adam exp_avg_sq");
}

// A kernel handed a tensor of another device refuses it by name, before any GPU work.
TEST(CudaLayers, WrongDeviceIsABackendError) {
    TANDEM_REQUIRE_GPUS(1);
    const ActivationConfig c{Shape{8}, Layout::contiguous, ActivationAlgorithm::relu, 0.f};
    auto gk = kernel_on<ActivationKernel>(gpu(), c);
    const Tensor x = random_tensor({8}, cpu(), 33);
    Tensor y = Tensor::empty({8}, gpu());
    try {
        gk->forward(x, y);
        ADD_FAILURE();
    } catch (const BackendError& e) {
        EXPECT_NE(std::string(e.what()).find("ReLU forward src: Tensor(8, f32, "),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace tandem::test

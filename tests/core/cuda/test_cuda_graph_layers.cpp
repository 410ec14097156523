// The layers of graph and sequence nets on a GPU compute what they compute on the CPU: each
// layer, copied (clone) with the same weights, runs one forward and one backward on the CPU
// test device and on cuda:0 from the same host inputs; outputs, input gradients and parameter
// gradients are compared. Then a sequence net trained with Adam and gradient clipping on one
// GPU against one CPU device. Skipped, saying why, without a GPU.
#include <map>

#include "device/cpu/cpu_device.h"
#include "engine/engine.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/embedding.h"
#include "layers/graph.h"
#include "layers/layer_norm.h"
#include "layers/linear.h"
#include "layers/merge.h"
#include "layers/narrow.h"
#include "layers/recurrent.h"
#include "layers/reshape.h"
#include "layers/softmax.h"
#include "support/cuda_parity.h"
#include "support/recurrent_options.h"
#include "support/toy_batch.h"

namespace tandem::test {
namespace {

template <class L, class... Args>
LayerPtr initialised(Args&&... args) {
    auto layer = std::make_shared<L>(std::forward<Args>(args)...);
    layer->initialize(3);
    return layer;
}

TEST(CudaGraphLayers, LstmAndGru) {
    TANDEM_REQUIRE_GPUS(1);
    const Tensor x = random_tensor({3, 5, 6}, cpu(), 1);
    // Two layers, the whole sequence, initial states given (the merge of three inputs).
    expect_same_on_gpu(
        initialised<Recurrent>(recurrent_options(RnnCellKind::lstm, 6, 8, 2, true, false)),
        {x, random_tensor({3, 2, 8}, cpu(), 2), random_tensor({3, 2, 8}, cpu(), 3)}, 4);
    expect_same_on_gpu(
        initialised<Recurrent>(recurrent_options(RnnCellKind::gru, 6, 8, 2, true, false)),
        {x, random_tensor({3, 2, 8}, cpu(), 5)}, 6);
    expect_same_on_gpu(
        initialised<Recurrent>(recurrent_options(RnnCellKind::gru, 6, 8, 1, false, true)), {x}, 7);
    // Wide enough that the cell kernel runs many blocks, long enough that errors would add up.
    expect_same_on_gpu(
        initialised<Recurrent>(recurrent_options(RnnCellKind::lstm, 32, 256, 1, true, true)),
        {random_tensor({16, 12, 32}, cpu(), 8)}, 9);
}

TEST(CudaGraphLayers, SoftmaxLayerNormEmbedding) {
    TANDEM_REQUIRE_GPUS(1);
    const Tensor x3 = random_tensor({4, 5, 7}, cpu(), 11, -3.f, 3.f);
    expect_same_on_gpu(initialised<Softmax>(2, false), {x3}, 12);
    expect_same_on_gpu(initialised<Softmax>(1, true), {x3}, 13);
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        SCOPED_TRACE(layout_name(layout));
        expect_same_on_gpu(initialised<Softmax>(1, false),
                           {random_tensor({2, 6, 3, 5}, cpu(), 14, -3.f, 3.f, layout)}, 15);
    }
    expect_same_on_gpu(initialised<LayerNorm>(std::vector<std::int64_t>{7}, 1e-5f, true), {x3}, 16);
    expect_same_on_gpu(initialised<LayerNorm>(std::vector<std::int64_t>{5, 7}, 1e-5f, false), {x3},
                       17);
    expect_same_on_gpu(initialised<LayerNorm>(std::vector<std::int64_t>{1000}, 1e-5f, true),
                       {random_tensor({3, 1000}, cpu(), 18)}, 19);
    // Indices as whole numbers, some repeated, so that rows gather several gradients.
    std::vector<float> ids;
    for (int i = 0; i < 24; ++i) ids.push_back(float((i * 7) % 10));
    expect_same_on_gpu(initialised<Embedding>(10, 6), {Tensor::from_vector({4, 6}, cpu(), ids)},
                       20);
}

TEST(CudaGraphLayers, JoinsAndSlices) {
    TANDEM_REQUIRE_GPUS(1);
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        SCOPED_TRACE(layout_name(layout));
        const Tensor a = random_tensor({2, 3, 4, 5}, cpu(), 21, -1.f, 1.f, layout);
        const Tensor b = random_tensor({2, 2, 4, 5}, cpu(), 22, -1.f, 1.f, layout);
        const Tensor c = random_tensor({2, 3, 4, 5}, cpu(), 23, -1.f, 1.f, layout);
        expect_same_on_gpu(initialised<Concat>(1), {a, b, c}, 24);
        expect_same_on_gpu(initialised<Concat>(3), {a, c}, 25);
        expect_same_on_gpu(initialised<Add>(), {a, c, a}, 26);
        expect_same_on_gpu(initialised<Mul>(), {a, c}, 27);
        expect_same_on_gpu(initialised<Narrow>(1, 1, 2), {a}, 28);
        expect_same_on_gpu(initialised<Narrow>(3, 2, 3), {a}, 29);
    }
    expect_same_on_gpu(initialised<Reshape>(std::vector<std::int64_t>{5, 12}),
                       {random_tensor({2, 3, 4, 5}, cpu(), 30)}, 31);
}

// An Inception-style block (three convolution branches joined along channels) bound to the GPU.
TEST(CudaGraphLayers, InceptionBlock) {
    TANDEM_REQUIRE_GPUS(1);
    auto conv = [](std::int64_t in, std::int64_t out, std::int64_t k, const char* name) {
        Conv2dOptions o;
        o.in_channels = in, o.out_channels = out, o.kernel_h = o.kernel_w = k,
        o.pad_h = o.pad_w = k / 2;
        LayerPtr layer = std::make_shared<Conv2d>(o);
        layer->set_name(name);
        return layer;
    };
    auto g = std::make_shared<Graph>();
    g->add_input("x");
    const auto b1 = g->add(conv(3, 2, 1, "b1"), {"x"});
    const auto b2 = g->add(conv(3, 3, 3, "b2"), {"x"});
    const auto b3 = g->add(conv(2, 2, 3, "b3"), {g->add(conv(3, 2, 1, "b3a"), {"x"})});
    g->set_outputs({g->add(std::make_shared<Concat>(1), {b1, b2, b3})});
    g->initialize(5);
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        SCOPED_TRACE(layout_name(layout));
        expect_same_on_gpu(g, {random_tensor({2, 3, 6, 6}, cpu(), 41, -1.f, 1.f, layout)}, 42);
    }
}

// Rows of the toy images as a sequence of 8 steps of 8 features: LSTM -> LayerNorm -> Linear,
// Adam with clipping, three steps on one GPU against one CPU device.
TEST(CudaGraphLayers, SequenceNetTrainsLikeTheCpu) {
    TANDEM_REQUIRE_GPUS(1);
    auto train = [](std::shared_ptr<Device> device) {
        EngineOptions o;
        o.net = std::make_shared<Sequential>(std::vector<LayerPtr>{
            std::make_shared<Reshape>(std::vector<std::int64_t>{8, 8}),
            std::make_shared<Recurrent>(recurrent_options(RnnCellKind::lstm, 8, 16, 1, true, true)),
            std::make_shared<LayerNorm>(std::vector<std::int64_t>{16}, 1e-5f, true),
            std::make_shared<Linear>(LinearOptions{16, 3, true, "kaiming"})});
        o.devices = {std::move(device)};
        o.optimizer.kind = OptimizerKind::adam;
        o.optimizer.adam.lr = 0.01f;
        o.optimizer.clip_norm = 0.5f;
        o.seed = 13;
        Engine engine(o);
        for (int s = 0; s < 3; ++s) {
            const Batch b = make_batch(s, 12);
            engine.step(b.images, b.labels);
        }
        return weights_of(engine.net());
    };
    expect_same_weights(train(unowned(gpu())),
                        train(std::make_shared<CpuDevice>(0, CpuDeviceOptions{1 << 30, 1})));
}

}  // namespace
}  // namespace tandem::test

#include <gtest/gtest.h>

#include "layers/layer_norm.h"
#include "layers/softmax.h"
#include "support/grad_check.h"
#include "support/torch_fixture.h"

namespace tandem::test {
namespace {

// Forward and backward of `layer` on the fixture's x and dy, in `layout`, against PyTorch's.
void expect_like_torch(Layer& layer, const TorchFixture& f, Layout layout) {
    SCOPED_TRACE(f.name() + (layout == Layout::channels_last ? " channels_last" : ""));
    for (Parameter* p : layer.parameters()) {
        p->value.copy_from(f[p->name]);
        p->grad.fill(0);
    }
    const Tensor x = f["x"].to_layout(layout), dy = f["dy"].to_layout(layout);
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    const Tensor y = layer.forward(x, pass);
    EXPECT_EQ(y.layout(), layout);
    expect_close(y.to_layout(Layout::contiguous), f["y"], "y", 1e-5f, 1e-6f);
    expect_close(layer.backward(x, dy, pass).to_layout(Layout::contiguous), f["dx"], "dx", 1e-4f,
                 1e-5f);
    for (Parameter* p : layer.parameters())
        expect_close(p->grad, f["grad." + p->name], "grad." + p->name, 1e-4f, 1e-5f);
    EXPECT_TRUE(tape.empty());
}

TEST(Softmax, MatchesPyTorch) {
    Softmax features(-1, false), channels(1, false), rows(2, true);
    expect_like_torch(features, TorchFixture("softmax_features"), Layout::contiguous);
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        expect_like_torch(channels, TorchFixture("softmax_channels"), layout);
        expect_like_torch(rows, TorchFixture("log_softmax_rows"), layout);
    }
}

TEST(Softmax, GradientsAndMistakes) {
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        GradCheckOptions o;
        o.layout = layout;
        Softmax s(1, false), l(-1, true);
        check_gradients(s, random_tensor({2, 4, 3, 2}, test_device(), 1, -2, 2, layout),
                        test_device(), o);
        check_gradients(l, random_tensor({2, 4, 3, 2}, test_device(), 2, -2, 2, layout),
                        test_device(), o);
    }
    EXPECT_EQ(Softmax(-1, false).options_text(), "dimension -1");
    EXPECT_EQ(Softmax(1, true).kind(), "LogSoftmax");
    EXPECT_THROW(Softmax(0, false), ConfigError);
    EXPECT_THROW(Softmax(3, false).output_shape({2, 3}), ShapeError);
    EXPECT_THROW(Softmax(-2, false).output_shape({2}), ShapeError);  // would be the batch
}

TEST(LayerNorm, MatchesPyTorch) {
    LayerNorm last({6}, 1e-5f, true), plain({8}, 1e-3f, false);
    expect_like_torch(last, TorchFixture("layer_norm_last"), Layout::contiguous);
    expect_like_torch(plain, TorchFixture("layer_norm_plain"), Layout::contiguous);
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        LayerNorm image({3, 4, 5}, 1e-5f, true);
        expect_like_torch(image, TorchFixture("layer_norm_image"), layout);
    }
}

TEST(LayerNorm, GradientsAndMistakes) {
    LayerNorm norm({3, 4}, 1e-5f, true);
    for (Parameter* p : norm.parameters())
        p->value.copy_from(random_tensor(p->value.shape(), test_device(), 3, 0.5f, 1.5f));
    GradCheckOptions o;
    o.tolerance = 2e-2f;
    check_gradients(norm, random_tensor({3, 2, 3, 4}, test_device(), 4, -2, 2), test_device(), o);
    EXPECT_EQ(norm.parameters()[0]->name, "weight");
    EXPECT_EQ(norm.parameters()[0]->value.shape(), (Shape{3, 4}));
    EXPECT_THROW(LayerNorm({}, 1e-5f, true), ConfigError);
    EXPECT_THROW(LayerNorm({4}, 0, true), ConfigError);
    try {
        norm.output_shape({2, 4, 3});
        FAIL() << "expected a ShapeError";
    } catch (const ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("does not end in 3x4"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace tandem::test

// A ReLU after batch norm, applied by the batch norm, and after a residual block, applied by
// its add (Layer::takes_relu): Sequential and GraphPart run the pair fused where the device has
// the kernel, and the results are those of the two layers run one after the other.
#include <gtest/gtest.h>

#include "layers/batch_norm2d.h"
#include "layers/graph_part.h"
#include "layers/relu.h"
#include "layers/residual.h"
#include "layers/sequential.h"
#include "support/close.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

const Shape kFusedShape{3, 5, 4, 6};

std::shared_ptr<BatchNorm2d> fused_test_bn(const std::string& impl = {}) {
    auto bn = std::make_shared<BatchNorm2d>(BatchNorm2dOptions{5});
    if (!impl.empty()) bn->set_kernel_impl(impl);
    bn->parameters()[0]->value.copy_from(random_tensor({5}, host_device(), 41, 0.5f, 1.5f));
    bn->parameters()[1]->value.copy_from(random_tensor({5}, host_device(), 42, -0.5f, 0.5f));
    return bn;
}

// What a training step gives: the output, the input's gradient, gamma's and beta's gradients
// and the running statistics, in that order.
using StepResult = std::vector<std::vector<float>>;

StepResult results(const Tensor& y, const Tensor& dx, BatchNorm2d& bn) {
    return {y.to_vector(),
            dx.to_vector(),
            bn.parameters()[0]->grad.to_vector(),
            bn.parameters()[1]->grad.to_vector(),
            bn.buffers()[0]->value.to_vector(),
            bn.buffers()[1]->value.to_vector()};
}

void expect_same_step(const StepResult& fused, const StepResult& apart) {
    const char* names[] = {"y", "dx", "gamma grad", "beta grad", "running mean", "running var"};
    for (std::size_t k = 0; k < fused.size(); ++k) expect_close(fused[k], apart[k], 1e-6, names[k]);
}

// The two layers one after the other, each on its own.
StepResult step_apart(const Tensor& x, const Tensor& dy) {
    auto bn = fused_test_bn();
    ReLU relu;
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    const Tensor h = bn->forward(x, pass);
    const Tensor y = relu.forward(h, pass);
    const Tensor dx = bn->backward(x, relu.backward(h, dy, pass), pass);
    return results(y, dx, *bn);
}

TEST(FusedRelu, SequentialMatchesTheLayersApart) {
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        SCOPED_TRACE(layout == Layout::contiguous ? "NCHW" : "NHWC");
        const Tensor x = random_tensor(kFusedShape, test_device(), 43, -2.f, 2.f, layout);
        const Tensor dy = random_tensor(kFusedShape, test_device(), 44, -1.f, 1.f, layout);
        auto bn = fused_test_bn();
        Sequential net({bn, std::make_shared<ReLU>()});
        Tape tape;
        Pass pass{test_device(), Mode::train, 0, tape, 0};
        ASSERT_TRUE(bn->takes_relu(pass)) << "the CPU has the fused kernel";
        const Tensor y = net.forward(x, pass);
        EXPECT_EQ(tape.get(bn.get()).size(), 3u) << "the statistics and the ReLU's mask";
        const Tensor dx = net.backward(x, dy, pass);
        expect_same_step(results(y, dx, *bn), step_apart(x, dy));
    }
}

TEST(FusedRelu, NotInEvaluationNorOnTheReferenceKernels) {
    Tape tape;
    Pass train{test_device(), Mode::train, 0, tape, 0}, eval{test_device(), Mode::eval, 0, tape, 0};
    EXPECT_TRUE(fused_test_bn()->takes_relu(train));
    EXPECT_FALSE(fused_test_bn()->takes_relu(eval));
    EXPECT_FALSE(fused_test_bn("reference")->takes_relu(train)) << "no reference kernel fuses";
    EXPECT_FALSE(ReLU().takes_relu(train)) << "a layer without the kernel never fuses";
}

// A pipeline cut between the two (forward over [0, 1), then [1, 2)) runs them apart.
TEST(FusedRelu, APairSplitBetweenTwoRangesRunsApart) {
    const Tensor x = random_tensor(kFusedShape, test_device(), 45, -2.f, 2.f);
    const Tensor dy = random_tensor(kFusedShape, test_device(), 46, -1.f, 1.f);
    auto bn = fused_test_bn();
    Sequential net({bn, std::make_shared<ReLU>()});
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    const Tensor h = net.forward_range(x, pass, 0, 1);
    const Tensor y = net.forward_range(h, pass, 1, 2);
    EXPECT_EQ(tape.get(bn.get()).size(), 2u) << "the statistics alone: not fused";
    const Tensor dh = net.backward_range(dy, pass, 1, 2);
    const Tensor dx = net.backward_range(dh, pass, 0, 1);
    expect_same_step(results(y, dx, *bn), step_apart(x, dy));
}

// v0 -bn-> v1 -relu-> v2, and v1 perhaps read by the caller too.
StepResult part_step(std::vector<std::size_t> outputs, std::size_t expect_saved) {
    const Tensor x = random_tensor(kFusedShape, test_device(), 47, -2.f, 2.f);
    const Tensor dy = random_tensor(kFusedShape, test_device(), 48, -1.f, 1.f);
    auto bn = fused_test_bn();
    ReLU relu;
    GraphPart part({{.layer = bn.get(), .inputs = {0}, .output = 1, .where = "bn"},
                    {.layer = &relu, .inputs = {1}, .output = 2, .where = "relu"}},
                   std::move(outputs));
    std::vector<Tensor> values(3), grads(3);
    values[0] = x;
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    part.forward(values, pass, 0, part.size());
    EXPECT_EQ(tape.get(bn.get()).size(), expect_saved);
    grads[2] = dy;
    part.backward(values, grads, pass, 0, part.size());
    return results(values[2], grads[0], *bn);
}

TEST(FusedRelu, GraphPartFusesWhenTheReluAloneReadsTheOutput) {
    const Tensor x = random_tensor(kFusedShape, test_device(), 47, -2.f, 2.f);
    const Tensor dy = random_tensor(kFusedShape, test_device(), 48, -1.f, 1.f);
    expect_same_step(part_step({2}, 3), step_apart(x, dy));
    // The caller reads the normalised values too (a send, the loss): they must stay unclipped.
    expect_same_step(part_step({1, 2}, 2), step_apart(x, dy));
}

// relu(bn(x) + x): a residual block whose body is a batch norm, identity shortcut.
std::shared_ptr<Residual> fused_test_block(const std::string& impl = {}) {
    auto block = std::make_shared<Residual>(
        std::make_shared<Sequential>(std::vector<LayerPtr>{fused_test_bn()}), nullptr);
    if (!impl.empty()) block->set_kernel_impl(impl);
    return block;
}

BatchNorm2d& body_bn(Residual& block) {
    return static_cast<BatchNorm2d&>(block.body().at(0));
}

TEST(FusedRelu, AResidualBlocksAddAppliesTheReluAfterIt) {
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        SCOPED_TRACE(layout == Layout::contiguous ? "NCHW" : "NHWC");
        const Tensor x = random_tensor(kFusedShape, test_device(), 49, -2.f, 2.f, layout);
        const Tensor dy = random_tensor(kFusedShape, test_device(), 50, -1.f, 1.f, layout);
        auto block = fused_test_block();
        Sequential net({block, std::make_shared<ReLU>()});
        Tape tape;
        Pass pass{test_device(), Mode::train, 0, tape, 0};
        ASSERT_TRUE(block->takes_relu(pass));
        const Tensor y = net.forward(x, pass);
        EXPECT_EQ(tape.get(block.get()).size(), 1u) << "the block keeps the ReLU's output";
        const Tensor dx = net.backward(x, dy, pass);

        auto apart = fused_test_block();
        ReLU relu;
        Tape apart_tape;
        Pass apart_pass{test_device(), Mode::train, 0, apart_tape, 0};
        const Tensor h = apart->forward(x, apart_pass);
        const Tensor apart_y = relu.forward(h, apart_pass);
        const Tensor apart_dx = apart->backward(x, relu.backward(h, dy, apart_pass), apart_pass);
        EXPECT_FALSE(apart_tape.contains(apart.get())) << "run alone, the block fuses nothing";
        expect_same_step(results(y, dx, body_bn(*block)),
                         results(apart_y, apart_dx, body_bn(*apart)));
    }
    Tape tape;
    Pass eval{test_device(), Mode::eval, 0, tape, 0};
    EXPECT_TRUE(fused_test_block()->takes_relu(eval)) << "the add needs no training statistics";
    EXPECT_FALSE(fused_test_block("reference")->takes_relu(eval)) << "no reference kernel fuses";
}

}  // namespace
}  // namespace tandem::test

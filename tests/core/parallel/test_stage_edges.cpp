// Stage speaks edges (issue 17, item 3): an output read by several stages goes out on each of
// their edges, the gradients they send back are summed, and a second input is refused. The
// test plays the other stages itself, on the StepBoard.
#include <gtest/gtest.h>

#include "base/error.h"
#include "device/cpu/cpu_device.h"
#include "device/host_device.h"
#include "layers/linear.h"
#include "layers/sequential.h"
#include "parallel/stage.h"
#include "parallel/step_plan.h"

namespace tandem::test {
namespace {

struct OneStage {
    OneStage() {
        net->initialize(7);
        StageParts parts;
        parts.device = device.get();
        parts.net = net;
        parts.end = 1;
        parts.parallel = &parallel;
        stage = std::make_unique<Stage>(std::move(parts));
    }
    std::shared_ptr<CpuDevice> device = std::make_shared<CpuDevice>(0, CpuDeviceOptions{std::size_t(1) << 30, 1});
    std::shared_ptr<Sequential> net = std::make_shared<Sequential>(
        std::vector<LayerPtr>{std::make_shared<Linear>(LinearOptions{3, 2, true, "kaiming"})});
    ParallelOptions parallel;
    std::unique_ptr<Stage> stage;
};

StepPlan plan_of(int edges) {
    const std::vector<float> x{0.5f, -1.f, 2.f, 1.5f, 0.25f, -0.75f};
    return StepPlan(Mode::train, 1, 1, edges, Tensor::from_vector({2, 3}, host_device(), x),
                    Tensor::zeros({2}, host_device()));
}

Tensor host(const std::vector<float>& values) { return Tensor::from_vector({2, 2}, host_device(), values); }

// input -e0-> the stage -e1-> and -e2-> two readers: the gradient it backs with is theirs summed.
// `readers` 1: one reader, handed the sum, for reference.
std::vector<std::vector<float>> gradients_with_readers(int readers, std::vector<float>* sent = nullptr) {
    OneStage s;
    DeviceProgram program;
    program.ops.push_back({.kind = OpKind::load_input, .micro_batch = 0, .edge = 0});
    program.ops.push_back({.kind = OpKind::forward, .micro_batch = 0, .layer_begin = 0, .layer_end = 1});
    for (int r = 1; r <= readers; ++r)
        program.ops.push_back({.kind = OpKind::send_activation, .micro_batch = 0, .peer = r, .edge = r});
    for (int r = 1; r <= readers; ++r)
        program.ops.push_back({.kind = OpKind::receive_gradient, .micro_batch = 0, .peer = r, .edge = r});
    program.ops.push_back({.kind = OpKind::backward, .micro_batch = 0, .layer_begin = 0, .layer_end = 1});
    StepPlan plan = plan_of(readers + 1);
    auto done = s.device->worker().submit([&] { s.stage->run(plan, program); });

    const std::vector<float> g1{0.5f, -0.25f, 1.f, 2.f}, g2{-1.5f, 0.75f, 0.125f, 3.f};
    std::vector<float> sum(g1.size());
    for (std::size_t i = 0; i < g1.size(); ++i) sum[i] = g1[i] + g2[i];
    std::vector<std::vector<float>> activations;
    for (int r = 1; r <= readers; ++r)
        activations.push_back(plan.board.take(EdgeDirection::forward, 0, r, 0).to_vector());
    for (const auto& a : activations) EXPECT_EQ(a, activations.front()) << "every reader gets the same output";
    if (sent) *sent = activations.front();
    if (readers == 1) {
        plan.board.put(EdgeDirection::backward, 0, 1, 0, host(sum));
    } else {
        plan.board.put(EdgeDirection::backward, 0, 1, 0, host(g1));
        plan.board.put(EdgeDirection::backward, 0, 2, 0, host(g2));
    }
    done.get();
    std::vector<std::vector<float>> grads;
    for (const auto& p : s.stage->parameters()) grads.push_back(p.parameter->grad.to_vector());
    return grads;
}

TEST(StageEdges, AnOutputReadByTwoStagesGetsTheirGradientsSummed) {
    std::vector<float> to_two, to_one;
    const auto summed = gradients_with_readers(2, &to_two), reference = gradients_with_readers(1, &to_one);
    EXPECT_EQ(to_two, to_one);
    ASSERT_EQ(summed.size(), 2u);  // weight and bias
    EXPECT_EQ(summed, reference);
    float norm = 0;
    for (float g : summed.front()) norm += g * g;
    EXPECT_GT(norm, 0.f);
}

TEST(StageEdges, ASecondInputIsRefused) {
    OneStage s;
    DeviceProgram program;
    program.ops.push_back({.kind = OpKind::load_input, .micro_batch = 0, .edge = 0});
    program.ops.push_back({.kind = OpKind::receive_activation, .micro_batch = 0, .peer = 1, .edge = 1});
    StepPlan plan = plan_of(2);
    plan.board.put(EdgeDirection::forward, 0, 1, 0, Tensor::zeros({2, 3}, host_device()));
    auto done = s.device->worker().submit([&] { s.stage->run(plan, program); });
    try {
        done.get();
        ADD_FAILURE() << "a second input was taken";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("stage 0 has a second input (edge 1)"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace tandem::test

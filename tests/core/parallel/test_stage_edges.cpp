// Stage speaks edges (issue 17, item 3): an output read by several stages goes out on each of
// their edges and the gradients they send back are summed. The test plays the other stages
// itself, on the StepBoard.
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

// One Linear (value 1, from the images: value 0) on stage 0, read by `readers` other stages
// (edges 1..readers).
std::shared_ptr<const UnitPlacement> one_unit_read_by(int readers) {
    auto placed = std::make_shared<UnitPlacement>();
    placed->units.push_back(
        {.name = "fc", .layer = 0, .node = -1, .inputs = {kBatchValue}, .value = 1});
    placed->values = 2, placed->loss_value = 1;
    StageNode node{.layer_begin = 0, .layer_end = 1, .inputs = {0}, .outputs = {}};
    placed->graph.edges.push_back({.id = 0, .from = kBatchInput, .to = 0});
    placed->edge_values.push_back(kBatchValue);
    for (int r = 1; r <= readers; ++r) {
        placed->graph.edges.push_back({.id = r, .from = 0, .to = r});
        placed->edge_values.push_back(1);
        node.outputs.push_back(r);
    }
    placed->graph.stages.push_back(node);
    return placed;
}

struct OneStage {
    explicit OneStage(int readers) {
        net->initialize(7);
        StageParts parts;
        parts.device = device.get();
        parts.net = net;
        parts.units = one_unit_read_by(readers);
        parts.parallel = &parallel;
        stage = std::make_unique<Stage>(std::move(parts));
    }
    std::shared_ptr<CpuDevice> device =
        std::make_shared<CpuDevice>(0, CpuDeviceOptions{std::size_t(1) << 30, 1});
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

Tensor host(const std::vector<float>& values) {
    return Tensor::from_vector({2, 2}, host_device(), values);
}

// input -e0-> the stage -e1-> and -e2-> two readers: the gradient it backs with is theirs summed.
// `readers` 1: one reader, handed the sum, for reference.
std::vector<std::vector<float>> gradients_with_readers(int readers,
                                                       std::vector<float>* sent = nullptr) {
    OneStage s(readers);
    DeviceProgram program;
    program.ops.push_back({.kind = OpKind::load_input, .micro_batch = 0, .edge = 0});
    program.ops.push_back(
        {.kind = OpKind::forward, .micro_batch = 0, .layer_begin = 0, .layer_end = 1});
    for (int r = 1; r <= readers; ++r)
        program.ops.push_back(
            {.kind = OpKind::send_activation, .micro_batch = 0, .peer = r, .edge = r});
    for (int r = 1; r <= readers; ++r)
        program.ops.push_back(
            {.kind = OpKind::receive_gradient, .micro_batch = 0, .peer = r, .edge = r});
    program.ops.push_back(
        {.kind = OpKind::backward, .micro_batch = 0, .layer_begin = 0, .layer_end = 1});
    StepPlan plan = plan_of(readers + 1);
    auto done = s.device->worker().submit([&] { s.stage->run(plan, program); });

    const std::vector<float> g1{0.5f, -0.25f, 1.f, 2.f}, g2{-1.5f, 0.75f, 0.125f, 3.f};
    std::vector<float> sum(g1.size());
    for (std::size_t i = 0; i < g1.size(); ++i) sum[i] = g1[i] + g2[i];
    std::vector<std::vector<float>> activations;
    for (int r = 1; r <= readers; ++r)
        activations.push_back(plan.board.take(EdgeDirection::forward, 0, r, 0).to_vector());
    for (const auto& a : activations)
        EXPECT_EQ(a, activations.front()) << "every reader gets the same output";
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
    const auto summed = gradients_with_readers(2, &to_two),
               reference = gradients_with_readers(1, &to_one);
    EXPECT_EQ(to_two, to_one);
    ASSERT_EQ(summed.size(), 2u);  // weight and bias
    EXPECT_EQ(summed, reference);
    float norm = 0;
    for (float g : summed.front()) norm += g * g;
    EXPECT_GT(norm, 0.f);
}

}  // namespace
}  // namespace tandem::test

// Embedding's backward on a GPU in deterministic mode (issue 18): the same bits twice with
// many repeated indices (where atomicAdd's order would vary), and the CPU's sums within float
// tolerance; outside deterministic mode (atomics) the same sums within tolerance. AddLoss on a
// GPU against the CPU: what passes through, the term it adds, and its gradients, alone and in a
// graph. Skipped, saying why, without a GPU.
#include <memory>

#include "layers/add_loss.h"
#include "layers/element_loss.h"
#include "layers/embedding.h"
#include "layers/graph.h"
#include "layers/linear.h"
#include "support/cuda_parity.h"

namespace tandem::test {
namespace {

// 4096 lookups of 7 rows: each row gathers about 600 gradients.
Tensor repeated_indices() {
    std::vector<float> ids;
    for (int i = 0; i < 4096; ++i) ids.push_back(float((i * 5 + i / 7) % 7));
    return Tensor::from_vector({64, 64}, cpu(), ids);
}

// The weight gradient of one forward and backward of `layer` on `device`, on the host.
Tensor embedding_gradient(Embedding& layer, Device& device, const Tensor& ids, const Tensor& dy) {
    return run_layer_on(layer, device, {ids}, dy).grads.at("weight");
}

TEST(CudaEmbedding, DeterministicBackwardGivesTheSameBitsTwice) {
    TANDEM_REQUIRE_GPUS(1);
    const std::shared_ptr<Device> gpu = own_cuda_device();
    gpu->set_deterministic(true);
    Embedding layer(7, 33);
    layer.initialize(2);
    const Tensor ids = repeated_indices();
    const Tensor dy = random_tensor({64, 64, 33}, cpu(), 3);
    auto copy = std::dynamic_pointer_cast<Embedding>(layer.clone());
    const Tensor first = embedding_gradient(*copy, *gpu, ids, dy);
    const Tensor second = embedding_gradient(*copy, *gpu, ids, dy);
    EXPECT_EQ(first.to_vector(), second.to_vector()) << "deterministic mode changed bits";
    // The sums of about 600 values each: the CPU adds them in the same order.
    test::expect_near(first, embedding_gradient(layer, cpu(), ids, dy), 1e-5, "gradient of weight");
}

TEST(CudaEmbedding, AtomicBackwardMatchesTheCpu) {
    TANDEM_REQUIRE_GPUS(1);
    const std::shared_ptr<Device> gpu = own_cuda_device();
    ASSERT_FALSE(gpu->deterministic());
    Embedding layer(7, 33);
    layer.initialize(2);
    const Tensor ids = repeated_indices();
    const Tensor dy = random_tensor({64, 64, 33}, cpu(), 4);
    auto copy = std::dynamic_pointer_cast<Embedding>(layer.clone());
    test::expect_near(embedding_gradient(*copy, *gpu, ids, dy),
                      embedding_gradient(layer, cpu(), ids, dy), 1e-4, "gradient of weight");
}

// AddLoss(x, output, target) alone: x passes through, the term (weight x the loss summed over
// the samples) and the output's gradient are the CPU's; x's gradient is dy as it came; the
// target has none.
TEST(CudaAddLoss, MatchesTheCpu) {
    TANDEM_REQUIRE_GPUS(1);
    for (ElementLossKind kind : {ElementLossKind::mse, ElementLossKind::bce_with_logits}) {
        SCOPED_TRACE(kind == ElementLossKind::mse ? "MSE" : "BCEWithLogits");
        const Tensor x = random_tensor({5, 3}, cpu(), 1);
        const Tensor y = random_tensor({5, 4}, cpu(), 2, -2.f, 2.f);
        const Tensor t = random_tensor({5, 4}, cpu(), 3, 0.f, 1.f);
        const Tensor dy = random_tensor({5, 3}, cpu(), 4);
        struct Result {
            Tensor out, dx, d_output;
            bool target_gradient = true;
            double added = 0;
        };
        auto run = [&](Device& device) {
            AddLoss layer(std::make_shared<ElementLoss>(kind), 0.75f);
            layer.to(device);
            Tape tape;
            Pass pass{device, Mode::train, 0, tape, 0};
            pass.loss_scale = 0.125f;
            Result r;
            pass.added_loss = &r.added;
            const std::vector<Tensor> xs{x.to(device), y.to(device), t.to(device)};
            r.out = layer.merge(xs, pass).to(host_device());
            const std::vector<Tensor> d = layer.unmerge(xs, dy.to(device), pass);
            EXPECT_EQ(d.size(), 3u);
            r.dx = d[0].to(host_device());
            r.d_output = d[1].to(host_device());
            r.target_gradient = d[2].defined();
            return r;
        };
        const Result want = run(cpu()), got = run(gpu());
        EXPECT_EQ(got.out.to_vector(), x.to_vector());
        EXPECT_NEAR(got.added, want.added, 1e-5 * std::max(1.0, std::fabs(want.added)));
        EXPECT_GT(want.added, 0);
        EXPECT_EQ(got.dx.to_vector(), dy.to_vector());
        test::expect_near(got.d_output, want.d_output, 1e-5, "gradient of the output");
        EXPECT_FALSE(got.target_gradient);
    }
}

LayerPtr named_linear(std::int64_t in, std::int64_t out, const char* name) {
    auto l = std::make_shared<Linear>(LinearOptions{in, out, true, "kaiming"});
    l->set_name(name);
    return l;
}

// x -> enc -> code; code -> dec -> recon; AddLoss(code, recon, x) -> head, on the GPU and the
// CPU: the head's output, and every weight's gradient (the decoder's come from the term only).
TEST(CudaAddLoss, InAGraphMatchesTheCpu) {
    TANDEM_REQUIRE_GPUS(1);
    auto g = std::make_shared<Graph>();
    g->add_input("x");
    g->add(named_linear(6, 3, "enc"), {"x"});
    g->add(named_linear(3, 6, "dec"), {"enc"});
    auto added =
        std::make_shared<AddLoss>(std::make_shared<ElementLoss>(ElementLossKind::mse), 0.5f);
    added->set_name("recon");
    g->add(added, {"enc", "dec", "x"});
    g->add(named_linear(3, 3, "head"), {"recon"});
    g->set_outputs({"head"});
    g->initialize(7);
    expect_same_on_gpu(g, {random_tensor({4, 6}, cpu(), 8)}, 9);
}

}  // namespace
}  // namespace tandem::test

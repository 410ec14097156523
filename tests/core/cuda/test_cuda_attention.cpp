// The attention layers and their kernel on a GPU compute what they compute on the CPU: each
// layer, cloned with the same weights, runs one forward and one backward on the CPU test device
// and on cuda:0 from the same host inputs (outputs, input and parameter gradients and the
// weights read back compared), and the kernel's batched products are checked in every
// transpose combination. Skipped, saying why, without a GPU.
#include <map>

#include "layers/additive_attention.h"
#include "layers/scaled_dot_product_attention.h"
#include "support/cuda_parity.h"

namespace tandem::test {
namespace {

constexpr double kAttentionTol = 1e-4;

// Compared besides the outputs and gradients: the weights the layer keeps for reading back.
Tensor weights_of_attention(const Layer& layer) {
    return dynamic_cast<const Attention&>(layer).attention_weights();
}

void expect_attention_same_on_gpu(const std::shared_ptr<Attention>& layer,
                                  const std::vector<Tensor>& xs, std::uint64_t seed) {
    expect_same_on_gpu(layer, xs, seed, weights_of_attention);
}

std::shared_ptr<Attention> scaled_layer(std::optional<float> scale, bool causal) {
    ScaledDotProductAttentionOptions o;
    o.scale = scale;
    o.causal = causal;
    return std::make_shared<ScaledDotProductAttention>(o);
}

std::shared_ptr<Attention> additive_layer(std::int64_t query, std::int64_t key, std::int64_t hidden,
                                          bool bias) {
    AdditiveAttentionOptions o;
    o.query_size = query;
    o.key_size = key;
    o.hidden_size = hidden;
    o.bias = bias;
    auto layer = std::make_shared<AdditiveAttention>(o);
    layer->initialize(3);
    return layer;
}

TEST(CudaAttention, ScaledDotProduct) {
    TANDEM_REQUIRE_GPUS(1);
    const Tensor q = random_tensor({3, 5, 8}, cpu(), 1), k = random_tensor({3, 7, 8}, cpu(), 2);
    expect_attention_same_on_gpu(scaled_layer({}, false),
                                 {q, k, random_tensor({3, 7, 4}, cpu(), 3)}, 4);
    expect_attention_same_on_gpu(scaled_layer(0.3f, true), {q, k}, 5);
    // Self-attention over a long sequence: many blocks, many masked scores.
    const Tensor x = random_tensor({16, 64, 32}, cpu(), 6);
    expect_attention_same_on_gpu(scaled_layer({}, true),
                                 {x, x, random_tensor({16, 64, 24}, cpu(), 7)}, 8);
}

TEST(CudaAttention, Additive) {
    TANDEM_REQUIRE_GPUS(1);
    const Tensor q = random_tensor({3, 5, 6}, cpu(), 11), k = random_tensor({3, 7, 4}, cpu(), 12);
    expect_attention_same_on_gpu(additive_layer(6, 4, 10, true),
                                 {q, k, random_tensor({3, 7, 5}, cpu(), 13)}, 14);
    expect_attention_same_on_gpu(additive_layer(6, 4, 10, false), {q, k}, 15);
    // A decoder over a 28-step encoder, hidden 128: the score kernels run many blocks.
    expect_attention_same_on_gpu(
        additive_layer(64, 64, 128, true),
        {random_tensor({16, 10, 64}, cpu(), 16), random_tensor({16, 28, 64}, cpu(), 17)}, 18);
}

TEST(CudaAttention, BatchedProductsInEveryTransposeAndAccumulate) {
    TANDEM_REQUIRE_GPUS(1);
    auto on_cpu = kernel_on<AttentionKernel>(cpu(), {});
    auto on_gpu = kernel_on<AttentionKernel>(gpu(), {});
    const std::int64_t batch = 4, m = 7, n = 5, k = 9;
    for (bool ta : {false, true})
        for (bool tb : {false, true})
            for (bool accumulate : {false, true}) {
                SCOPED_TRACE(std::string(ta ? "a^T" : "a") + (tb ? " b^T" : " b") +
                             (accumulate ? " +=" : ""));
                const Tensor a = random_tensor({batch, ta ? k : m, ta ? m : k}, cpu(), 21);
                const Tensor b = random_tensor({batch, tb ? n : k, tb ? k : n}, cpu(), 22);
                const Tensor c0 = random_tensor({batch, m, n}, cpu(), 23);
                BatchedProduct p{batch, m, n, k, ta, tb, 0.5f, accumulate};
                Tensor want = c0.clone(), got = c0.to(gpu());
                on_cpu->batched_product(a, b, want, p);
                on_gpu->batched_product(a.to(gpu()), b.to(gpu()), got, p);
                expect_near(got.to(host_device()), want, kAttentionTol, "product");
            }
}

}  // namespace
}  // namespace tandem::test

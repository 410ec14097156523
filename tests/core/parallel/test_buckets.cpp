#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "layers/layer.h"
#include "parallel/buckets.h"
#include "parallel/comm_inproc.h"
#include "support/collectives.h"
#include "support/expect_error.h"

namespace tandem::test {
namespace {

Tensor random_tensor(const Shape& shape, std::mt19937& gen) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(static_cast<std::size_t>(shape.numel()));
    for (auto& v : values) v = normal(gen);
    return Tensor::from_vector(shape, host_device(), values);
}

// A stage's gradients in backward order: fc2, fc1, conv2, conv1 (weights and biases).
std::vector<std::pair<std::string, Tensor>> make_grads(unsigned seed) {
    std::mt19937 gen(seed);
    return {{"fc2.bias", random_tensor({10}, gen)},
            {"fc2.weight", random_tensor({10, 64}, gen)},
            {"fc1.bias", random_tensor({64}, gen)},
            {"fc1.weight", random_tensor({64, 300}, gen)},
            {"conv2.bias", random_tensor({12}, gen)},
            {"conv2.weight", random_tensor({12, 6, 3, 3}, gen)},
            {"conv1.bias", random_tensor({6}, gen)},
            {"conv1.weight", random_tensor({6, 3, 3, 3}, gen)}};
}

TEST(GradientBuckets, GroupsInBackwardOrder) {
    std::mt19937 gen(1);
    // 400 + 400 + 200 bytes fill a 1000-byte bucket exactly; 1200 bytes get a bucket alone.
    std::vector<std::pair<std::string, Tensor>> grads{
        {"a", random_tensor({100}, gen)}, {"b", random_tensor({100}, gen)},
        {"c", random_tensor({50}, gen)},  {"big", random_tensor({300}, gen)},
        {"d", random_tensor({10}, gen)},  {"e", random_tensor({2, 5}, gen)}};
    GradientBuckets buckets(grads, 1000);
    ASSERT_EQ(buckets.size(), 3u);
    EXPECT_EQ(buckets.bucket(0).members, (std::vector<std::size_t>{0, 1, 2}));
    EXPECT_EQ(buckets.bucket(0).offsets, (std::vector<std::size_t>{0, 100, 200}));
    EXPECT_EQ(buckets.bucket(0).flat.numel(), 250);
    EXPECT_EQ(buckets.bucket(1).members, (std::vector<std::size_t>{3}));
    EXPECT_EQ(buckets.bucket(2).members, (std::vector<std::size_t>{4, 5}));
    EXPECT_EQ(buckets.bucket(2).offsets, (std::vector<std::size_t>{0, 10}));
    EXPECT_EQ(&buckets.bucket(2).flat.device(), &host_device());
    EXPECT_THROW(buckets.bucket(3), ConfigError);

    // Everything in one bucket by default (25 MB).
    EXPECT_EQ(GradientBuckets(grads).size(), 1u);
}

TEST(GradientBuckets, PackUnpackRoundTrip) {
    auto grads = make_grads(5);
    std::vector<std::vector<float>> before;
    for (auto& [name, g] : grads) before.push_back(g.to_vector());
    GradientBuckets buckets(grads, 2048);
    ASSERT_GT(buckets.size(), 2u);
    for (std::size_t b = 0; b < buckets.size(); ++b) {
        buckets.pack(b);
        const auto& bucket = buckets.bucket(b);
        const auto flat = bucket.flat.to_vector();
        for (std::size_t k = 0; k < bucket.members.size(); ++k) {
            const auto& expected = before[bucket.members[k]];
            EXPECT_EQ(
                std::vector<float>(flat.begin() + static_cast<std::ptrdiff_t>(bucket.offsets[k]),
                                   flat.begin() + static_cast<std::ptrdiff_t>(bucket.offsets[k] +
                                                                              expected.size())),
                expected)
                << grads[bucket.members[k]].first;
        }
    }
    for (auto& [name, g] : grads) g.fill(0.0f);
    for (std::size_t b = 0; b < buckets.size(); ++b) {
        const auto& bucket = buckets.bucket(b);
        buckets.unpack(b, 0.5f);
        for (std::size_t k = 0; k < bucket.members.size(); ++k) {
            const auto got = grads[bucket.members[k]].second.to_vector();
            for (std::size_t i = 0; i < got.size(); ++i)
                ASSERT_EQ(got[i], before[bucket.members[k]][i] * 0.5f)
                    << grads[bucket.members[k]].first;
        }
    }
}

// Bucketed all-reduce equals reducing every tensor alone: bit for bit with the tree (its
// order is per element), within rounding with the ring (its chunks fall elsewhere).
TEST(GradientBuckets, BucketedReduceEqualsPerTensorReduce) {
    const int ranks = 3;
    for (auto algorithm : {ReduceAlgorithm::tree, ReduceAlgorithm::ring}) {
        std::vector<std::vector<std::pair<std::string, Tensor>>> bucketed, alone;
        for (int r = 0; r < ranks; ++r) {
            bucketed.push_back(make_grads(100 + static_cast<unsigned>(r)));
            alone.push_back(make_grads(100 + static_cast<unsigned>(r)));
        }
        auto comm = make_inproc_communicator(ranks);
        expect_no_errors(run_ranks(ranks, [&](int r) {
            GradientBuckets buckets(bucketed[static_cast<std::size_t>(r)], 4096);
            buckets.all_reduce_all(*comm, r, algorithm, 1.0f / ranks);
        }));
        expect_no_errors(run_ranks(ranks, [&](int r) {
            for (auto& [name, g] : alone[static_cast<std::size_t>(r)]) {
                comm->all_reduce_sum(r, g.data<float>(), static_cast<std::size_t>(g.numel()),
                                     algorithm);
                float* p = g.data<float>();
                for (std::int64_t i = 0; i < g.numel(); ++i) p[i] *= 1.0f / ranks;
            }
        }));
        for (int r = 0; r < ranks; ++r)
            for (std::size_t t = 0; t < alone[0].size(); ++t) {
                const auto got = bucketed[static_cast<std::size_t>(r)][t].second.to_vector();
                const auto want = alone[static_cast<std::size_t>(r)][t].second.to_vector();
                for (std::size_t i = 0; i < got.size(); ++i) {
                    if (algorithm == ReduceAlgorithm::tree)
                        ASSERT_EQ(got[i], want[i])
                            << alone[0][t].first << "[" << i << "], rank " << r;
                    else
                        ASSERT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i])))
                            << alone[0][t].first << "[" << i << "], rank " << r;
                }
            }
    }
}

TEST(GradientBuckets, RejectsWhatItCannotPack) {
    std::vector<std::pair<std::string, Tensor>> ints{
        {"steps", Tensor::zeros({4}, host_device(), DType::i32)}};
    expect_error<ConfigError>([&] { GradientBuckets buckets(ints); }, "steps");
    std::vector<std::pair<std::string, Tensor>> missing{{"w", Tensor()}};
    EXPECT_THROW(GradientBuckets{missing}, ConfigError);
}

}  // namespace
}  // namespace tandem::test

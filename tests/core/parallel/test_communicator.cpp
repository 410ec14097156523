#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <latch>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "parallel/comm_inproc.h"
#include "support/collectives.h"

namespace tandem::test {
namespace {

// The ring's order for element i: start after the chunk's owner, end with the owner.
float ring_order(const std::vector<std::vector<float>>& x, std::size_t i) {
    const int n = static_cast<int>(x.size());
    int owner = 0;
    while (i >= ring_chunk(x[0].size(), n, owner).end) ++owner;
    float acc = x[static_cast<std::size_t>((owner + 1) % n)][i];
    for (int k = 2; k <= n; ++k) acc += x[static_cast<std::size_t>((owner + k) % n)][i];
    return acc;
}

std::vector<std::vector<float>> all_reduce(int ranks, std::vector<std::vector<float>> x,
                                           ReduceAlgorithm algorithm) {
    auto comm = make_inproc_communicator(ranks);
    expect_no_errors(run_ranks(ranks, [&](int r) {
        auto& v = x[static_cast<std::size_t>(r)];
        comm->all_reduce_sum(r, v.data(), v.size(), algorithm);
    }));
    return x;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    // memcmp must not see the null data() of an empty vector, even for zero bytes.
    return a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(Communicator, AlgorithmNames) {
    EXPECT_EQ(reduce_algorithm_name(ReduceAlgorithm::ring), "ring");
    EXPECT_EQ(parse_reduce_algorithm("tree"), ReduceAlgorithm::tree);
    try {
        parse_reduce_algorithm("butterfly");
        FAIL() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("butterfly"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("ring, tree"), std::string::npos) << e.what();
    }
    EXPECT_THROW(make_inproc_communicator(0), ConfigError);
}

TEST(Communicator, CanonicalTreeSplit) {
    EXPECT_EQ(canonical_tree_split(2), 1u);
    EXPECT_EQ(canonical_tree_split(3), 2u);
    EXPECT_EQ(canonical_tree_split(4), 2u);
    EXPECT_EQ(canonical_tree_split(5), 4u);
    EXPECT_EQ(canonical_tree_split(8), 4u);
    EXPECT_EQ(canonical_tree_split(9), 8u);
}

TEST(Communicator, RingChunksCoverTheData) {
    for (int n : {1, 2, 3, 4, 8})
        for (std::size_t count : {0u, 1u, 7u, 16u, 1000u, 100003u}) {
            std::size_t next = 0;
            for (int c = 0; c < n; ++c) {
                const ChunkRange chunk = ring_chunk(count, n, c);
                EXPECT_EQ(chunk.begin, next) << n << " ranks, count " << count << ", chunk " << c;
                EXPECT_LE(chunk.begin, chunk.end);
                if (chunk.end < count) {
                    EXPECT_EQ(chunk.end % 16, 0u);
                }
                next = chunk.end;
            }
            EXPECT_EQ(next, count) << n << " ranks, count " << count;
        }
}

// Both algorithms against serial references: the exact order each documents, and a double
// precision sum within float tolerance; every rank gets the same bits.
TEST(Communicator, AllReduceMatchesSerialReference) {
    for (int n : {1, 2, 3, 4, 8})
        for (std::size_t count : {0u, 1u, 7u, 1000u, 100003u}) {
            const auto x = make_inputs(n, count, static_cast<unsigned>(n * 1000 + count));
            const auto ring = all_reduce(n, x, ReduceAlgorithm::ring);
            const auto tree = all_reduce(n, x, ReduceAlgorithm::tree);
            for (int r = 0; r < n; ++r) {
                ASSERT_TRUE(bit_equal(ring[static_cast<std::size_t>(r)], ring[0]))
                    << n << " ranks, count " << count;
                ASSERT_TRUE(bit_equal(tree[static_cast<std::size_t>(r)], tree[0]))
                    << n << " ranks, count " << count;
            }
            for (std::size_t i = 0; i < count; ++i) {
                double exact = 0, magnitude = 0;
                for (const auto& v : x) {
                    exact += v[i];
                    magnitude += std::fabs(v[i]);
                }
                const double tolerance = 1e-6 * magnitude + 1e-30;
                ASSERT_NEAR(ring[0][i], exact, tolerance)
                    << n << " ranks, count " << count << ", element " << i;
                ASSERT_NEAR(tree[0][i], exact, tolerance)
                    << n << " ranks, count " << count << ", element " << i;
                ASSERT_EQ(tree[0][i], pairwise(x, 0, x.size(), i))
                    << n << " ranks, count " << count << ", element " << i;
                ASSERT_EQ(ring[0][i], ring_order(x, i))
                    << n << " ranks, count " << count << ", element " << i;
            }
        }
}

TEST(Communicator, TreeIsThePairwiseSum) {
    // ((x0 + x1) + (x2 + x3)) + (x4 + x5), written out, for six ranks.
    const auto x = make_inputs(6, 4096, 7);
    const auto tree = all_reduce(6, x, ReduceAlgorithm::tree);
    for (std::size_t i = 0; i < 4096; ++i) {
        const float expected = ((x[0][i] + x[1][i]) + (x[2][i] + x[3][i])) + (x[4][i] + x[5][i]);
        ASSERT_EQ(tree[0][i], expected) << "element " << i;
    }
    // Composition: a tree over 2 ranks of pairwise sums over 4 values each is the tree over 8.
    const auto eight = make_inputs(8, 512, 8);
    std::vector<std::vector<float>> halves(2, std::vector<float>(512));
    for (std::size_t i = 0; i < 512; ++i) {
        halves[0][i] = pairwise(eight, 0, 4, i);
        halves[1][i] = pairwise(eight, 4, 8, i);
    }
    const auto two = all_reduce(2, halves, ReduceAlgorithm::tree);
    const auto all = all_reduce(8, eight, ReduceAlgorithm::tree);
    EXPECT_TRUE(bit_equal(two[0], all[0]));
}

TEST(Communicator, DeterministicRunToRun) {
    for (auto algorithm : {ReduceAlgorithm::ring, ReduceAlgorithm::tree}) {
        const auto x = make_inputs(4, 100003, 11);
        const auto first = all_reduce(4, x, algorithm);
        for (int run = 0; run < 3; ++run)
            EXPECT_TRUE(bit_equal(all_reduce(4, x, algorithm)[0], first[0]))
                << reduce_algorithm_name(algorithm) << ", run " << run;
    }
}

TEST(Communicator, BroadcastAndReduce) {
    for (int n : {1, 2, 3, 5})
        for (int root = 0; root < n; ++root) {
            const std::size_t count = 1003;
            auto x = make_inputs(n, count, static_cast<unsigned>(n * 10 + root));
            const auto original = x;
            auto comm = make_inproc_communicator(n);
            expect_no_errors(run_ranks(n, [&](int r) {
                comm->broadcast(r, x[static_cast<std::size_t>(r)].data(), count, root);
            }));
            for (int r = 0; r < n; ++r)
                EXPECT_TRUE(bit_equal(x[static_cast<std::size_t>(r)],
                                      original[static_cast<std::size_t>(root)]))
                    << n << " ranks, root " << root << ", rank " << r;

            x = original;
            expect_no_errors(run_ranks(n, [&](int r) {
                comm->reduce_sum(r, x[static_cast<std::size_t>(r)].data(), count, root);
            }));
            for (std::size_t i = 0; i < count; ++i)
                ASSERT_EQ(x[static_cast<std::size_t>(root)][i],
                          pairwise(original, 0, original.size(), i))
                    << n << " ranks, root " << root << ", element " << i;
        }
}

TEST(Communicator, BarrierOrdersRounds) {
    const int n = 4, rounds = 200;
    auto comm = make_inproc_communicator(n);
    std::vector<int> seen(n, 0);  // plain ints: the barrier must order them (TSan checks)
    std::atomic<int> wrong{0};
    expect_no_errors(run_ranks(n, [&](int r) {
        for (int k = 1; k <= rounds; ++k) {
            seen[static_cast<std::size_t>(r)] = k;
            comm->barrier(r);
            for (int q = 0; q < n; ++q)
                if (seen[static_cast<std::size_t>(q)] != k) ++wrong;
            comm->barrier(r);
        }
    }));
    EXPECT_EQ(wrong.load(), 0);
}

TEST(Communicator, BytesSent) {
    const int n = 4;
    const std::size_t count = 1024;  // four chunks of 256
    auto x = make_inputs(n, count, 3);
    auto comm = make_inproc_communicator(n);
    expect_no_errors(run_ranks(n, [&](int r) {
        comm->all_reduce_sum(r, x[static_cast<std::size_t>(r)].data(), count,
                             ReduceAlgorithm::ring);
    }));
    for (int r = 0; r < n; ++r)  // 2(n-1)/n of the data
        EXPECT_EQ(comm->bytes_sent(r), 2 * 3 * 256 * sizeof(float)) << "rank " << r;
    auto tree = make_inproc_communicator(n);
    expect_no_errors(run_ranks(n, [&](int r) {
        tree->all_reduce_sum(r, x[static_cast<std::size_t>(r)].data(), count,
                             ReduceAlgorithm::tree);
    }));
    // Ranks 1, 2, 3 send their partial sums up once; rank 0 sends the result to three ranks.
    EXPECT_EQ(tree->bytes_sent(0), 3 * count * sizeof(float));
    for (int r = 1; r < n; ++r)
        EXPECT_EQ(tree->bytes_sent(r), count * sizeof(float)) << "rank " << r;
    EXPECT_THROW(tree->bytes_sent(4), ConfigError);
}

TEST(Communicator, SizeOneIsANoOp) {
    auto comm = make_inproc_communicator(1);
    std::vector<float> v{1, 2, 3};
    comm->all_reduce_sum(0, v.data(), v.size(), ReduceAlgorithm::ring);
    comm->all_reduce_sum(0, v.data(), v.size(), ReduceAlgorithm::tree);
    comm->broadcast(0, v.data(), v.size(), 0);
    comm->reduce_sum(0, v.data(), v.size(), 0);
    comm->barrier(0);
    EXPECT_EQ(v, (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(comm->bytes_sent(0), 0u);
}

// Two ranks wait in an all-reduce, two never come: abort() wakes both with the reason; after
// reset() all four reduce normally. Repeated so that both orders (abort before and after the
// waiters block) occur.
TEST(Communicator, AbortWakesWaitersWhoseRanksNeverArrive) {
    const int n = 4;
    auto comm = make_inproc_communicator(n);
    for (int round = 0; round < 20; ++round) {
        std::latch started(2);
        std::vector<float> a(100, 1.0f), b(100, 2.0f);
        std::vector<std::string> messages(2);
        std::vector<int> cancelled(2, 0);  // not vector<bool>: its bits share words
        const auto t0 = std::chrono::steady_clock::now();
        std::thread r0([&] {
            started.count_down();
            try {
                comm->all_reduce_sum(0, a.data(), a.size(), ReduceAlgorithm::ring);
            } catch (const CancelledError& e) {
                cancelled[0] = 1;
                messages[0] = e.what();
            }
        });
        std::thread r1([&] {
            started.count_down();
            try {
                comm->all_reduce_sum(1, b.data(), b.size(), ReduceAlgorithm::tree);
            } catch (const CancelledError& e) {
                cancelled[1] = 1;
                messages[1] = e.what();
            }
        });
        started.wait();
        comm->abort("cpu:3 out of memory in stage 1");
        r0.join();
        r1.join();
        EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
        for (int r = 0; r < 2; ++r) {
            EXPECT_TRUE(cancelled[static_cast<std::size_t>(r)])
                << "round " << round << ", rank " << r;
            EXPECT_EQ(messages[static_cast<std::size_t>(r)], "cpu:3 out of memory in stage 1");
        }
        // Later collectives throw too, until reset.
        EXPECT_THROW(comm->barrier(2), CancelledError);
        comm->reset();
        auto x = make_inputs(n, 777, static_cast<unsigned>(round));
        const auto original = x;
        expect_no_errors(run_ranks(n, [&](int r) {
            comm->all_reduce_sum(r, x[static_cast<std::size_t>(r)].data(), 777,
                                 ReduceAlgorithm::tree);
        }));
        for (std::size_t i = 0; i < 777; ++i) ASSERT_EQ(x[3][i], pairwise(original, 0, n, i));
    }
}

// Ranks loop over collectives until one of them is aborted from outside mid-stream: every
// rank stops with CancelledError, whatever phase it was in.
TEST(Communicator, AbortStopsRanksInAnyPhase) {
    const int n = 3;
    auto comm = make_inproc_communicator(n);
    std::latch running(n);
    std::vector<int> cancelled(n, 0);
    // The buffers outlive every rank: after abort, a rank finishing its current phase may
    // still read another's buffer, as the communicator documents.
    std::vector<std::vector<float>> buffers(n, std::vector<float>(5000, 1.0f));
    std::thread aborter([&] {
        running.wait();
        comm->abort("stopped by the test");
    });
    auto errors = run_ranks(n, [&](int r) {
        auto& v = buffers[static_cast<std::size_t>(r)];
        running.count_down();
        try {
            for (int k = 0;; ++k) {
                comm->all_reduce_sum(r, v.data(), v.size(),
                                     k % 2 ? ReduceAlgorithm::ring : ReduceAlgorithm::tree);
            }
        } catch (const CancelledError& e) {
            if (std::string(e.what()) == "stopped by the test")
                cancelled[static_cast<std::size_t>(r)] = 1;
        }
    });
    aborter.join();
    expect_no_errors(errors);
    EXPECT_EQ(cancelled, std::vector<int>(n, 1));
}

TEST(Communicator, MismatchedCallsFailOnEveryRank) {
    auto comm = make_inproc_communicator(2);
    std::vector<float> a(10), b(12);
    auto errors = run_ranks(2, [&](int r) {
        if (r == 0)
            comm->all_reduce_sum(0, a.data(), a.size(), ReduceAlgorithm::ring);
        else
            comm->all_reduce_sum(1, b.data(), b.size(), ReduceAlgorithm::ring);
    });
    for (int r = 0; r < 2; ++r) {
        ASSERT_TRUE(errors[static_cast<std::size_t>(r)]) << "rank " << r;
        try {
            std::rethrow_exception(errors[static_cast<std::size_t>(r)]);
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("count 12"), std::string::npos) << e.what();
        }
    }
    // A bad rank number aborts rather than leaving the others waiting.
    comm->reset();
    auto bad = run_ranks(2, [&](int r) { comm->barrier(r == 0 ? 0 : 7); });
    EXPECT_TRUE(bad[0]);
    EXPECT_TRUE(bad[1]);
}

TEST(Communicator, StressManyCollectives) {
    const int n = 4, rounds = 300;
    auto comm = make_inproc_communicator(n);
    std::atomic<int> wrong{0};
    expect_no_errors(run_ranks(n, [&](int r) {
        std::vector<float> v(67);
        for (int k = 0; k < rounds; ++k) {
            // Small integers: every order gives the exact sum, so each result can be checked.
            std::fill(v.begin(), v.end(), static_cast<float>(r + k % 5));
            const float sum = static_cast<float>(n * (k % 5) + n * (n - 1) / 2);
            switch (k % 4) {
                case 0: comm->all_reduce_sum(r, v.data(), v.size(), ReduceAlgorithm::ring); break;
                case 1: comm->all_reduce_sum(r, v.data(), v.size(), ReduceAlgorithm::tree); break;
                case 2: comm->reduce_sum(r, v.data(), v.size(), k % n); break;
                case 3: comm->broadcast(r, v.data(), v.size(), k % n); break;
            }
            const float expected = k % 4 == 3 ? static_cast<float>(k % n + k % 5) : sum;
            if ((k % 4 != 2 || r == k % n) && v[66] != expected) ++wrong;
            if (k % 7 == 0) comm->barrier(r);
        }
    }));
    EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace tandem::test

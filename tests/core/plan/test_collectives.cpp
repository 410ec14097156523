// NCCL's collectives as the simulator plays them (issue 20): NVSwitch ports shared by a GPU's
// peers, the double binary tree's shape, the tree's time against its closed form, rings that
// spread over the machines' NICs, and when the tree beats the ring.
#include <gtest/gtest.h>

#include <set>

#include "plan/collectives.h"
#include "plan/simulator.h"

namespace tandem::test {
namespace {

// `machines` machines of `gpus` A100s each on an NVSwitch fabric of `links` NVLink 3 links a
// GPU, a GPU's PCIe switch on an HDR NIC to one network switch (one machine: no network).
Topology fabric(int gpus, int machines = 1, int links = 12) {
    TopologySpec spec;
    spec.name = "fabric";
    spec.nodes.push_back({"network", "", "", "", 0, 1, 0, 1});
    for (int m = 0; m < machines; ++m) {
        // Appended, not "m" + to_string(m): GCC 12 warns falsely on that operator+ where it
        // inlines it (-Wstringop-overflow, seen once this file's unity batch changed), and the
        // build treats warnings as errors.
        std::string host = "m";
        host += std::to_string(m);
        spec.nodes.push_back({host, "network", machines > 1 ? "ib_hdr" : "pcie4_x16", "", 0, 1, 0,
                              machines > 1 ? gpus : 1});
        FabricSpec f{host + ".nvswitch", "nvlink3", links, {}};  // none for one GPU
        for (int g = 0; g < gpus; ++g) {
            const std::string gpu = host + ".gpu" + std::to_string(g);
            spec.nodes.push_back({gpu, host, "pcie4_x16", "A100", 0, 1, 0, 1});
            f.devices.push_back(gpu);
        }
        if (gpus > 1) spec.fabrics.push_back(f);
    }
    return Topology(spec);
}

std::vector<int> first(int n) {
    std::vector<int> d;
    for (int i = 0; i < n; ++i) d.push_back(i);
    return d;
}

// One bucket's all-reduce among the first n devices, alone: a step of nothing else.
double all_reduce_ms(const Topology& t, int n, std::size_t bytes, ReduceAlgorithm algorithm) {
    return simulate_all_reduce_ms(t, first(n), bytes, algorithm);
}

TEST(Collectives, NvSwitchPortsAreSharedByAGpusPeers) {
    const Topology t = fabric(4);
    // gpu0 -> gpu1 and gpu0 -> gpu2 both leave through gpu0's port; gpu2 -> gpu3 shares nothing
    // with gpu0 -> gpu1.
    const auto a = t.route(0, 1), b = t.route(0, 2), c = t.route(2, 3);
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[0], b[0]);
    EXPECT_NE(a[1], b[1]);
    for (int x : a)
        for (int y : c) EXPECT_NE(x, y);
    // A GPU's port is its 12 links together: 240 GB/s attained, not per peer.
    EXPECT_DOUBLE_EQ(t.channels()[static_cast<std::size_t>(a[0])].bandwidth_gbs, 12 * 20.0);

    // A ring of 4 on the fabric: in each step every GPU sends through its own port and
    // receives through its own, so no step waits on a shared port: 6 steps of a quarter.
    const std::size_t bytes = std::size_t(64) << 20;
    const double ring = all_reduce_ms(t, 4, bytes, ReduceAlgorithm::ring);
    EXPECT_NEAR(ring, 6 * t.copy_ms(0, 1, bytes / 4), 1e-9);
}

TEST(Collectives, TwoCopiesFromOneGpuQueueOnItsPortAndDisjointPairsDoNot) {
    // The simulator's rule for copies (StepSimulator::reserve: each channel of the route
    // first come, first served, for the bytes at its bandwidth; the copy lands when the last is
    // through, plus the route's latency) over fabric routes: copies from one GPU to two peers,
    // or from two GPUs into one, queue on the shared port; disjoint pairs do not.
    const Topology t = fabric(4);
    const std::size_t bytes = std::size_t(48) << 20;
    const double one = t.copy_ms(0, 1, bytes), through = double(bytes) / (240.0 * 1e6);
    std::vector<double> free(t.channels().size(), 0.0);
    auto reserve = [&](int from, int to) {
        double end = 0, latency_us = 0;
        for (int c : t.route(from, to)) {
            const Channel& ch = t.channels()[static_cast<std::size_t>(c)];
            auto& f = free[static_cast<std::size_t>(c)];
            f += double(bytes) / (ch.bandwidth_gbs * 1e6);
            end = std::max(end, f);
            latency_us += ch.latency_us;
        }
        return end + latency_us / 1e3;
    };
    EXPECT_NEAR(reserve(0, 1), one, 1e-12);
    EXPECT_NEAR(reserve(0, 2), one + through, 1e-12);  // gpu0's port: after the first
    EXPECT_NEAR(reserve(3, 2), one + through, 1e-12);  // gpu2's port out of the fabric
    std::fill(free.begin(), free.end(), 0.0);
    EXPECT_NEAR(reserve(0, 1), one, 1e-12);
    EXPECT_NEAR(reserve(2, 3), one, 1e-12);  // disjoint
}

TEST(Collectives, DoubleBinaryTreeIsNcclsAndComplementary) {
    // NCCL's illustration for 12 ranks (src/graph/trees.cc): 0 - 8; 8 - 4, 10; 4 - 2, 6; ...
    const std::vector<int> expected = {-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 8, 10};
    const auto trees = double_binary_tree(12);
    EXPECT_EQ(trees[0], expected);
    EXPECT_EQ(trees[1][11], -1);  // the mirror's root
    EXPECT_EQ(trees[1][3], 11);
    for (int n : {2, 4, 6, 8, 12, 16}) {
        const auto t = double_binary_tree(n);
        std::set<int> interior0(t[0].begin(), t[0].end()), interior1(t[1].begin(), t[1].end());
        for (int r = 0; r < n; ++r)
            EXPECT_FALSE(interior0.count(r) && interior1.count(r) && n > 2)
                << "rank " << r << " of " << n << " is interior in both trees";
    }
    for (int n : {3, 5, 13}) {  // shifted: still one root each, every rank reaching it
        const auto t = double_binary_tree(n);
        for (const auto& parent : t) {
            int roots = 0;
            for (int r = 0; r < n; ++r) {
                roots += parent[static_cast<std::size_t>(r)] < 0;
                int at = r, hops = 0;
                while (parent[static_cast<std::size_t>(at)] >= 0 && hops <= n)
                    at = parent[static_cast<std::size_t>(at)], ++hops;
                EXPECT_LE(hops, n) << "a cycle in a tree of " << n;
            }
            EXPECT_EQ(roots, 1);
        }
    }
}

TEST(Collectives, TreeTimeIsItsClosedForm) {
    // One machine: the chain 0 .. n-1 (the second tree reversed). An interior GPU's port sends
    // its trees' halves up and down: 2 S through it (S with two GPUs); the pipeline fills over
    // 2 (n - 1) hops of one 512 KiB chunk (or the half message, if smaller).
    for (int n : {2, 4, 8}) {
        const Topology t = fabric(n);
        const double port = 12 * 20.0 * 1e6;  // bytes a ms
        const double latency = 2.0e-3;        // ms, once a hop
        for (std::size_t bytes :
             {std::size_t(64) << 10, std::size_t(25) << 20, std::size_t(256) << 20}) {
            const double chunk = double(std::min<std::size_t>(kTreeChunkBytes, bytes / 2));
            const double closed = (n == 2 ? 1.0 : 2.0) * double(bytes) / port +
                                  2 * (n - 1) * (latency + chunk / port);
            EXPECT_NEAR(tree_all_reduce(t, first(n), bytes).ms(), closed, 1e-9)
                << n << " GPUs, " << bytes << " bytes";
            EXPECT_NEAR(all_reduce_ms(t, n, bytes, ReduceAlgorithm::tree), closed, 1e-9)
                << n << " GPUs, " << bytes << " bytes";
        }
    }
}

// The parameter-server baseline: every other GPU's bucket into GPU 0's port, one after
// another, then the sum back out of it the same way: 2 (n - 1) S through one port, plus each
// step's latency (one hop through the fabric), against the ring's 2 (n - 1) / n S.
TEST(Collectives, AParameterServerQueuesOnTheServersPort) {
    const double port = 12 * 20.0 * 1e6;  // bytes a ms
    const double latency = 2.0e-3;        // ms, once a hop
    const std::size_t bytes = std::size_t(25) << 20;
    for (int n : {2, 4, 8}) {
        const Topology t = fabric(n);
        const double server = simulate_all_reduce_ms(t, first(n), bytes, ReduceAlgorithm::ring,
                                                     /*parameter_server=*/true);
        EXPECT_NEAR(server, 2 * (n - 1) * double(bytes) / port + 2 * latency, 1e-9) << n;
        if (n > 2) {
            EXPECT_GT(server, 2 * all_reduce_ms(t, n, bytes, ReduceAlgorithm::ring)) << n;
        }
    }
}

TEST(Collectives, TreeSpansMachinesWithADoubleBinaryTree) {
    // 8 machines of one GPU: a chain per machine is one GPU, the machines in NCCL's two trees.
    // A machine's NIC sends, in the tree where it is interior, a half to its parent and a half
    // to each of two children, and in the other, where it is a leaf, a half to its parent: 2 S.
    const Topology t = fabric(1, 8);
    ASSERT_EQ(t.machine_count(), 8);
    const std::size_t bytes = std::size_t(64) << 20;
    const TreeAllReduce tree = tree_all_reduce(t, first(8), bytes);
    EXPECT_EQ(tree.parent[0], (std::vector<int>{-1, 2, 4, 2, 0, 6, 4, 6}));
    const double nic = 23.0 * 1e6;
    EXPECT_NEAR(tree.bandwidth_ms, 2 * double(bytes) / nic, 1e-9);
    // Depth: log2(8) levels, not 8 ranks: the fill is (3 + 3) hops of the deeper tree at most.
    EXPECT_LT(tree.fill_ms, 8 * t.copy_ms(0, 1, kTreeChunkBytes));
}

TEST(Collectives, RingsAcrossMachinesLeaveThroughEveryGpu) {
    const Topology t = fabric(4, 2);
    ASSERT_EQ(t.machine_count(), 2);
    const auto rings = all_reduce_rings(t, first(8));
    ASSERT_EQ(rings.size(), 4u);
    std::set<int> exits;
    for (const auto& ring : rings) {
        ASSERT_EQ(ring.size(), 8u);
        EXPECT_EQ(std::set<int>(ring.begin(), ring.end()).size(), 8u);
        exits.insert(ring[3]);  // the last of machine 0 before machine 1
        for (int i = 0; i < 4; ++i) EXPECT_EQ(t.machine(ring[static_cast<std::size_t>(i)]), 0);
    }
    EXPECT_EQ(exits.size(), 4u);
    // One machine: one ring, as before.
    EXPECT_EQ(all_reduce_rings(fabric(8), first(8)).size(), 1u);
}

TEST(Collectives, TreeWinsSmallMessagesAcrossMachinesRingWinsLargeOnOne) {
    // NCCL's choice: across many machines a small message's ring pays 2 (n - 1) latencies,
    // the tree about 2 log2(n); inside one NVSwitch machine the ring moves less through each
    // port (2 (n - 1) / n S against the tree's 2 S).
    const Topology many = fabric(1, 16);
    const std::size_t small = std::size_t(64) << 10;
    EXPECT_LT(all_reduce_ms(many, 16, small, ReduceAlgorithm::tree),
              all_reduce_ms(many, 16, small, ReduceAlgorithm::ring) / 2);
    const Topology one = fabric(8);
    const std::size_t large = std::size_t(256) << 20;
    EXPECT_LT(all_reduce_ms(one, 8, large, ReduceAlgorithm::ring),
              all_reduce_ms(one, 8, large, ReduceAlgorithm::tree));
}

TEST(Collectives, FabricErrorsNameTheFabric) {
    auto error_of = [](auto change) {
        TopologySpec spec;
        spec.name = "bad";
        spec.nodes.push_back({"host", "", "", "", 0, 1, 0, 1});
        for (int g = 0; g < 2; ++g)
            spec.nodes.push_back(
                {"gpu" + std::to_string(g), "host", "pcie4_x16", "A100", 0, 1, 0, 1});
        spec.fabrics.push_back({"nvswitch", "nvlink3", 12, {"gpu0", "gpu1"}});
        change(spec);
        try {
            Topology t(spec);
        } catch (const ConfigError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(error_of([](TopologySpec&) {}), "");
    EXPECT_NE(error_of([](TopologySpec& s) {
                  s.fabrics[0].devices[1] = "gpu7";
              }).find("fabric 'nvswitch': 'gpu7' is not a device"),
              std::string::npos);
    EXPECT_NE(error_of([](TopologySpec& s) {
                  s.fabrics[0].link = "nvlink9";
              }).find("fabric 'nvswitch': unknown link model 'nvlink9'"),
              std::string::npos);
    EXPECT_NE(error_of([](TopologySpec& s) { s.fabrics[0].count = 0; }).find("count"),
              std::string::npos);
    EXPECT_NE(error_of([](TopologySpec& s) {
                  s.fabrics.push_back(s.fabrics[0]);
              }).find("two fabrics are called 'nvswitch'"),
              std::string::npos);
    EXPECT_NE(error_of([](TopologySpec& s) {
                  s.fabrics.push_back({"other", "nvlink3", 1, {"gpu0", "gpu1"}});
              }).find("'gpu0' is already on fabric 'nvswitch'"),
              std::string::npos);
    EXPECT_NE(error_of([](TopologySpec& s) {
                  s.nodes[1].count = 0;
              }).find("node 'gpu0' has 0 links to 'host'"),
              std::string::npos);
}

}  // namespace
}  // namespace tandem::test

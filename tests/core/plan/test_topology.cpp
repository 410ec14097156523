// Topologies: routes through the tree and over peer links, copy times, and clear errors for
// bad input (unknown device model, parent or link, cycles, nodes left unconnected).
#include <gtest/gtest.h>

#include <set>

#include "base/error.h"
#include "plan/topology.h"

namespace tandem::test {
namespace {

// Two sockets under an I/O hub, two PCIe switches each, two V100s a switch: the 8-GPU server.
TopologySpec server() {
    TopologySpec t;
    t.name = "server";
    t.nodes.push_back({"ioh", "", "", "", 0, 1, 0});
    for (int s = 0; s < 2; ++s) {
        const std::string socket = "socket" + std::to_string(s);
        t.nodes.push_back({socket, "ioh", "qpi", "", 0, 1, 0});
        for (int w = 0; w < 2; ++w) {
            const std::string sw = "switch" + std::to_string(2 * s + w);
            t.nodes.push_back({sw, socket, "pcie3_x16", "", 0, 1, 0});
            for (int g = 0; g < 2; ++g)
                t.nodes.push_back(
                    {"gpu" + std::to_string(4 * s + 2 * w + g), sw, "pcie3_x16", "V100", 0, 1, 0});
        }
    }
    return t;
}

std::string error_of(const TopologySpec& spec) {
    try {
        Topology t(spec);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

TEST(Topology, RoutesGoThroughTheLowestCommonSwitch) {
    const Topology t(server());
    ASSERT_EQ(t.device_count(), 8);
    EXPECT_EQ(t.device(3).name, "gpu3");
    EXPECT_EQ(t.device(0).memory_bytes, std::size_t(32) << 30);
    EXPECT_TRUE(t.route(2, 2).empty());
    auto names = [&](int a, int b) {
        std::vector<std::string> out;
        for (int c : t.route(a, b)) out.push_back(t.channels()[static_cast<std::size_t>(c)].name);
        return out;
    };
    EXPECT_EQ(names(0, 1), (std::vector<std::string>{"gpu0->switch0", "switch0->gpu1"}));
    EXPECT_EQ(names(1, 2), (std::vector<std::string>{"gpu1->switch0", "switch0->socket0",
                                                     "socket0->switch1", "switch1->gpu2"}));
    EXPECT_EQ(names(7, 0).size(), 6u);
    EXPECT_EQ(names(7, 0)[2], "socket1->ioh");
    // The slowest hop sets the rate: QPI between sockets, PCIe under one socket.
    const std::size_t mib64 = std::size_t(64) << 20;
    EXPECT_NEAR(t.copy_ms(0, 1, mib64), 2 * 1.5e-3 + double(mib64) / 12.0e6, 1e-9);
    EXPECT_NEAR(t.copy_ms(0, 7, mib64), (4 * 1.5 + 2 * 5.0) * 1e-3 + double(mib64) / 9.0e6, 1e-9);
}

TEST(Topology, PeerLinksGoDirect) {
    TopologySpec spec = server();
    spec.peers.push_back({"gpu0", "gpu5", "nvlink2", 2});
    const Topology t(spec);
    ASSERT_EQ(t.route(0, 5).size(), 1u);
    EXPECT_EQ(t.channels()[static_cast<std::size_t>(t.route(5, 0)[0])].name, "gpu5->gpu0");
    EXPECT_NEAR(t.copy_ms(0, 5, 44000000), 2e-3 + 44000000 / 44.0e6, 1e-9);  // two links: 44 GB/s
    EXPECT_EQ(t.route(0, 4).size(), 6u);  // no peer link: the tree
}

TEST(Topology, RingsFollowPeerLinks) {
    // Two NVLink quads joined gpu i <-> gpu i + 4, beside the PCIe tree: a ring in index order
    // would cross the sockets from gpu3 to gpu4; the ring order keeps every hop on NVLink.
    TopologySpec spec = server();
    for (int q : {0, 4}) {
        for (int a = 0; a < 4; ++a)
            for (int b = a + 1; b < 4; ++b)
                spec.peers.push_back(
                    {"gpu" + std::to_string(q + a), "gpu" + std::to_string(q + b), "nvlink2", 1});
    }
    for (int i = 0; i < 4; ++i)
        spec.peers.push_back(
            {"gpu" + std::to_string(i), "gpu" + std::to_string(i + 4), "nvlink2", 1});
    const Topology t(spec);
    const std::vector<int> all{0, 1, 2, 3, 4, 5, 6, 7};
    const auto ring = t.ring_order(all);
    ASSERT_EQ(ring.size(), 8u);
    EXPECT_EQ(std::set<int>(ring.begin(), ring.end()).size(), 8u);
    for (std::size_t i = 0; i < ring.size(); ++i)
        EXPECT_EQ(t.route(ring[i], ring[(i + 1) % ring.size()]).size(), 1u)
            << "hop " << ring[i] << " -> " << ring[(i + 1) % ring.size()] << " leaves NVLink";
}

TEST(Topology, CpuDevicesShareTheirMachinesCores) {
    TopologySpec spec;
    spec.name = "cpu2";
    spec.nodes.push_back({"host", "", "", "", 0, 1, 2});
    spec.nodes.push_back({"cpu:0", "host", "shared_memory", "cpu", 1 << 30, 1, 0});
    spec.nodes.push_back({"cpu:1", "host", "shared_memory", "cpu", 1 << 30, 1, 0});
    const Topology t(spec);
    EXPECT_EQ(t.pools(), std::vector<int>{2});
    EXPECT_TRUE(t.device(1).cpu);
    EXPECT_EQ(t.device(1).pool, 0);
}

TEST(Topology, BadInputIsAClearError) {
    auto with = [](auto change) {
        TopologySpec spec = server();
        change(spec);
        return error_of(spec);
    };
    EXPECT_EQ(error_of(server()), "");
    EXPECT_NE(with([](TopologySpec& s) {
                  s.nodes[3].device = "V200";
              }).find("unknown device model 'V200'"),
              std::string::npos);
    EXPECT_NE(
        with([](TopologySpec& s) { s.nodes[3].link = "pcie9"; }).find("unknown link model 'pcie9'"),
        std::string::npos);
    EXPECT_NE(with([](TopologySpec& s) {
                  s.nodes[3].parent = "switch9";
              }).find("unknown parent 'switch9'"),
              std::string::npos);
    EXPECT_NE(with([](TopologySpec& s) { s.nodes[3].link = ""; }).find("but no link"),
              std::string::npos);
    EXPECT_NE(with([](TopologySpec& s) { s.nodes[3].parent = ""; }).find("both have no parent"),
              std::string::npos);
    // socket0 -> switch0 -> socket0: a cycle, not connected to the hub.
    const std::string cycle = with([](TopologySpec& s) { s.nodes[1].parent = "switch0"; });
    EXPECT_NE(cycle.find("cycle"), std::string::npos) << cycle;
    EXPECT_NE(with([](TopologySpec& s) {
                  s.nodes[0].parent = "gpu0", s.nodes[0].link = "pcie3_x16";
              }).find("cycle"),
              std::string::npos);
    EXPECT_NE(
        with([](TopologySpec& s) { s.nodes[4].name = "gpu0"; }).find("two nodes are called 'gpu0'"),
        std::string::npos);
    EXPECT_NE(with([](TopologySpec& s) {
                  s.peers.push_back({"gpu0", "gpu9", "nvlink2", 1});
              }).find("no device 'gpu9'"),
              std::string::npos);
    EXPECT_NE(with([](TopologySpec& s) {
                  for (auto& n : s.nodes) n.device = "";
              }).find("no devices"),
              std::string::npos);
    TopologySpec cpu;
    cpu.name = "cpu";
    cpu.nodes.push_back({"host", "", "", "", 0, 1, 0});
    cpu.nodes.push_back({"cpu:0", "host", "shared_memory", "cpu", 1 << 30, 1, 0});
    EXPECT_NE(error_of(cpu).find("under no node that gives its cores"), std::string::npos);
}

}  // namespace
}  // namespace tandem::test

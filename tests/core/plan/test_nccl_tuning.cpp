// NCCL's own choice of all-reduce algorithm and protocol (nccl_tuning.h) and how the simulator
// plays it (issue 20): LL for small messages and Simple, LL128 or NVLS for large ones, where the
// formulas cross; the tree across many machines for small messages and the ring for large;
// NVLS on a switch that reduces, at the bus bandwidth the in-switch reduction gives.
#include <gtest/gtest.h>

#include "support/expect_error.h"

#include "base/error.h"
#include "plan/collectives.h"
#include "plan/plan_schema.h"
#include "plan/simulator.h"

namespace tandem::test {
namespace {

// `machines` machines of 8 `model` GPUs on an NVSwitch fabric of `links` `link` links a GPU
// (reducing when `reduces`), each GPU's PCIe switch on a NIC of the network (one machine: no
// network); or, with `link` empty, the GPUs on PCIe 4.0 only.
Topology tuned_machines(const std::string& model, const std::string& link, int links, bool reduces,
                        int machines = 1) {
    TopologySpec spec;
    spec.name = "tuned";
    spec.nodes.push_back({"network", "", "", "", 0, 1, 0, 1});
    for (int m = 0; m < machines; ++m) {
        // (Appended, not "m" + to_string(m): GCC 12 warns falsely of an overflow there.)
        std::string host = "m";
        host += std::to_string(m);
        spec.nodes.push_back(
            {host, "network", machines > 1 ? "ib_ndr" : "pcie4_x16", "", 0, 1, 0, 8});
        FabricSpec f{host + ".nvswitch", link, links, {}, reduces};
        for (int g = 0; g < 8; ++g) {
            const std::string gpu = host + ".gpu" + std::to_string(g);
            spec.nodes.push_back({gpu, host, "pcie4_x16", model, 0, 1, 0, 1});
            f.devices.push_back(gpu);
        }
        if (!link.empty()) spec.fabrics.push_back(f);
    }
    return Topology(spec);
}

std::vector<int> tuned_devices(int n) {
    std::vector<int> d;
    for (int i = 0; i < n; ++i) d.push_back(i);
    return d;
}

// The size (bytes) where two pairs' times cross, from the model's latencies and bandwidths.
double crossover_bytes(const NcclComm& comm, NcclAlgorithm a, NcclProtocol small,
                       NcclProtocol large) {
    const double dl = nccl_latency_us(comm, a, large) - nccl_latency_us(comm, a, small);
    const double per_byte = 1 / (1000 * nccl_bandwidth_gbs(comm, a, small)) -
                            1 / (1000 * nccl_bandwidth_gbs(comm, a, large));
    return dl / per_byte;
}

TEST(NcclTuning, LlForSmallMessagesSimpleOrLl128ForLargeWhereTheFormulasCross) {
    // 8 H100 on NVSwitch without NVLS: the ring with LL below the crossover, LL128 above it.
    const Topology t = tuned_machines("H100", "nvlink4", 18, false);
    const NcclComm comm = nccl_comm(t, tuned_devices(8));
    EXPECT_EQ(comm.nodes, 1);
    EXPECT_TRUE(comm.nvlink);
    EXPECT_NEAR(comm.intra_gbs, 18 * 20.5, 1e-9);  // a port: 18 NVLink 4 links
    EXPECT_EQ(nccl_channels(comm), 16);
    // LL carries half the link, capped by NCCL's Hopper ceiling of 141 GB/s; LL128 120/128.
    EXPECT_NEAR(nccl_bandwidth_gbs(comm, NcclAlgorithm::ring, NcclProtocol::ll), 141.0 * 8 / 14,
                1e-9);
    EXPECT_NEAR(nccl_bandwidth_gbs(comm, NcclAlgorithm::ring, NcclProtocol::ll128),
                18 * 20.5 * 0.92 * 8 / 14, 1e-9);
    // NCCL's latencies: base + 14 NVLink hops (LL 0.6 us each, LL128 1.9, Simple 3.4).
    EXPECT_NEAR(nccl_latency_us(comm, NcclAlgorithm::ring, NcclProtocol::ll), 6.6 + 14 * 0.6, 1e-9);
    EXPECT_NEAR(nccl_latency_us(comm, NcclAlgorithm::ring, NcclProtocol::simple), 8.4 + 14 * 3.4,
                1e-9);

    const double cross =
        crossover_bytes(comm, NcclAlgorithm::ring, NcclProtocol::ll, NcclProtocol::ll128);
    EXPECT_GT(cross, 64 << 10);
    EXPECT_LT(cross, 8 << 20);
    const auto below = static_cast<std::size_t>(cross * 0.9);
    const auto above = static_cast<std::size_t>(cross * 1.1);
    EXPECT_EQ(nccl_choose(comm, 4096).name(), "ring/LL");
    EXPECT_EQ(nccl_choose(comm, below).name(), "ring/LL");
    EXPECT_EQ(nccl_choose(comm, above).name(), "ring/LL128");
    // Simple's per-byte rate is the link's; LL128's 0.92 of it, so Simple wins at last.
    EXPECT_EQ(nccl_choose(comm, std::size_t(4) << 30).name(), "ring/Simple");
}

TEST(NcclTuning, Ll128OnlyOverNvlinkAndTheSimulatorPlaysTheProtocols) {
    // PCIe only: no LL128 (NCCL enables it on NVLink-class paths), LL then Simple.
    const Topology pcie = tuned_machines("A100", "", 0, false);
    const NcclComm comm = nccl_comm(pcie, tuned_devices(8));
    EXPECT_FALSE(comm.nvlink);
    EXPECT_EQ(nccl_bandwidth_gbs(comm, NcclAlgorithm::ring, NcclProtocol::ll128), 0);
    for (std::size_t bytes = 64; bytes <= (std::size_t(1) << 32); bytes *= 4)
        EXPECT_NE(nccl_choose(comm, bytes).protocol, NcclProtocol::ll128) << bytes;
    EXPECT_EQ(nccl_choose(comm, 1024).protocol, NcclProtocol::ll);
    // LL's bandwidth is half the link's (8 data bytes in 16) where NCCL's ceiling does not bind.
    EXPECT_NEAR(comm.intra_gbs, 25.0, 1e-9);
    EXPECT_NEAR(nccl_bandwidth_gbs(comm, NcclAlgorithm::ring, NcclProtocol::ll), 25.0 / 2 * 8 / 14,
                1e-9);
    // Played: 14 steps, each a 1/8 chunk sent as twice its bytes over PCIe 4.0 (two hops of
    // 1.5 us at LL's 1.0 / 5.7 of Simple's latency).
    const double pcie_ll = simulate_all_reduce_ms(pcie, tuned_devices(8), 64 << 10,
                                                  ReduceAlgorithm::ring, false, true);
    EXPECT_NEAR(pcie_ll, 14 * (3.0e-3 / 5.7 + 2 * 8192 / 25.0e6), 0.3e-3);
    EXPECT_EQ(nccl_choose(comm, std::size_t(1) << 30).name(), "ring/Simple");

    // Simulated: a small message with LL pays less latency than with Simple; a large one run
    // with NCCL's choice is no slower than the ring with Simple.
    const Topology h100 = tuned_machines("H100", "nvlink4", 18, false);
    const auto d = tuned_devices(8);
    const double ll = simulate_all_reduce_ms(h100, d, 8192, ReduceAlgorithm::ring, false, true);
    const double simple = simulate_all_reduce_ms(h100, d, 8192, ReduceAlgorithm::ring);
    EXPECT_LT(ll, 0.5 * simple);
    // LL's hops at 0.6 / 3.4 of the link's 2 us latency, 14 steps: about 14 x 0.35 us.
    EXPECT_NEAR(ll, 14 * 2.0e-3 * 0.6 / 3.4, 0.002);
    const std::size_t big = std::size_t(1) << 30;
    EXPECT_LE(simulate_all_reduce_ms(h100, d, big, ReduceAlgorithm::ring, false, true),
              simulate_all_reduce_ms(h100, d, big, ReduceAlgorithm::ring) * 1.0001);
}

TEST(NcclTuning, AutoTakesTheTreeAcrossManyMachinesForSmallMessagesAndTheRingForLarge) {
    // 16 DGX A100-like machines: NCCL's model takes the tree (log2 of the machines' latency)
    // for a small message, the ring for a large one; on one machine the ring throughout.
    const Topology many = tuned_machines("A100", "nvlink3", 12, false, 16);
    const auto all = tuned_devices(128);
    const NcclComm comm = nccl_comm(many, all);
    EXPECT_EQ(comm.nodes, 16);
    EXPECT_GT(comm.inter_gbs, 0);
    EXPECT_EQ(nccl_choose(comm, 64 << 10).algorithm, NcclAlgorithm::tree);
    EXPECT_EQ(nccl_choose(comm, std::size_t(4) << 30).algorithm, NcclAlgorithm::ring);
    const Topology one = tuned_machines("A100", "nvlink3", 12, false);
    for (std::size_t bytes = 64; bytes <= (std::size_t(1) << 32); bytes *= 4)
        EXPECT_EQ(choose_all_reduce(one, tuned_devices(8), bytes).algorithm, NcclAlgorithm::ring)
            << bytes;
    // The simulator plays the tree's choice: a small message across the machines takes the
    // tree's time, well under the ring's.
    const double chosen =
        simulate_all_reduce_ms(many, all, 64 << 10, ReduceAlgorithm::ring, false, true);
    const double ring = simulate_all_reduce_ms(many, all, 64 << 10, ReduceAlgorithm::ring);
    EXPECT_LT(chosen, 0.5 * ring);
    // And a large one: NCCL's model still takes the tree at 256 MiB, whose channels' trees leave
    // each machine through every GPU's NIC (one tree through one NIC would take 2.6x the ring).
    const std::size_t large = std::size_t(256) << 20;
    EXPECT_EQ(choose_all_reduce(many, all, large).algorithm, NcclAlgorithm::tree);
    EXPECT_LT(simulate_all_reduce_ms(many, all, large, ReduceAlgorithm::ring, false, true),
              simulate_all_reduce_ms(many, all, large, ReduceAlgorithm::ring));
}

TEST(NcclTuning, NvlsOnAReducingSwitchReachesItsBusBandwidth) {
    const Topology dgx = tuned_machines("H100", "nvlink4", 18, true);
    const auto d = tuned_devices(8);
    EXPECT_TRUE(nvls_available(dgx, d));
    EXPECT_EQ(choose_all_reduce(dgx, d, std::size_t(1) << 30).name(), "nvls/Simple");
    EXPECT_EQ(choose_all_reduce(dgx, d, 4096).name(), "ring/LL");  // NVLS's 25 us is too long
    // Each GPU's port carries S (1 + 1/n) each way at 0.85 of the links: bus bandwidth
    // 2 (n-1) / (n+1) of the port's x 0.85, where the ring gets the port's.
    const std::size_t bytes = std::size_t(4) << 30;
    const double ms = simulate_all_reduce_ms(dgx, d, bytes, ReduceAlgorithm::ring, false, true);
    const double busbw = static_cast<double>(bytes) * 2 * 7 / 8 / (ms * 1e6);
    EXPECT_NEAR(busbw, 18 * 20.5 * 0.85 * 2 * 7 / 9, 1.0);
    const double ring = static_cast<double>(bytes) * 2 * 7 / 8 /
                        (simulate_all_reduce_ms(dgx, d, bytes, ReduceAlgorithm::ring) * 1e6);
    EXPECT_GT(busbw, 1.25 * ring);
    // Not on an A100's switch (NCCL's NVLS needs Hopper), nor across machines, nor on a switch
    // that does not reduce.
    const Topology a100 = tuned_machines("A100", "nvlink3", 12, true);
    EXPECT_FALSE(nvls_available(a100, d));
    EXPECT_NE(choose_all_reduce(a100, d, bytes).algorithm, NcclAlgorithm::nvls);
    const Topology two = tuned_machines("H100", "nvlink4", 18, true, 2);
    EXPECT_NE(choose_all_reduce(two, tuned_devices(16), bytes).algorithm, NcclAlgorithm::nvls);
    EXPECT_FALSE(nvls_available(tuned_machines("H100", "nvlink4", 18, false), d));
    EXPECT_THROW(nvls_all_reduce(a100, d, bytes), ConfigError);
}

TEST(NcclTuning, ThePlannersAlgorithmChoicesAreDeclaredOnce) {
    EXPECT_TRUE(parse_plan_algorithm("auto").nccl_auto);
    EXPECT_TRUE(parse_plan_algorithm("server").parameter_server);
    EXPECT_EQ(parse_plan_algorithm("tree").algorithm, ReduceAlgorithm::tree);
    expect_error<ConfigError>([&] { parse_plan_algorithm("nvls"); },
                              "unknown algorithm 'nvls'; known: ring, tree, auto, "
                              "server");
}

}  // namespace
}  // namespace tandem::test

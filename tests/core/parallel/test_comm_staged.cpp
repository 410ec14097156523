// StagedCommunicator: ranks whose data the host cannot read (GPUs, played by stand-ins that
// keep their memory on the host but say they do not) reduce through a host communicator,
// with exactly its sums, their data crossing only through the devices' copies.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "parallel/comm_staged.h"
#include "support/collectives.h"
#include "support/stand_in_gpu.h"
#include "tensor/tensor.h"

namespace tandem::test {
namespace {

struct StandIns {
    explicit StandIns(int n) {
        for (int i = 0; i < n; ++i) gpus.push_back(std::make_unique<StandInGpu>(i));
    }
    std::vector<Device*> devices() const {
        std::vector<Device*> out;
        for (const auto& g : gpus) out.push_back(g.get());
        return out;
    }
    // Each rank's values in its device's memory.
    std::vector<Tensor> hold(const std::vector<std::vector<float>>& x) const {
        std::vector<Tensor> out;
        for (std::size_t r = 0; r < x.size(); ++r)
            out.push_back(Tensor::from_vector({std::int64_t(x[r].size())}, *gpus[r], x[r]));
        return out;
    }
    std::vector<std::unique_ptr<StandInGpu>> gpus;
};

// Deterministic mode on GPUs: the canonical pairwise tree, the in-process communicator's bits.
TEST(CommunicatorStaged, TreeAllReduceIsTheCanonicalSum) {
    for (int ranks : {2, 3, 5}) {
        StandIns s(ranks);
        const std::size_t count = 1000;
        const auto x = make_inputs(ranks, count, 11);
        auto data = s.hold(x);
        const auto comm = make_device_communicator(s.devices(), /*canonical_order=*/true);
        ASSERT_EQ(comm->size(), ranks);
        for (auto& g : s.gpus) g->bytes_from_host = 0;
        expect_no_errors(run_ranks(ranks, [&](int r) {
            comm->all_reduce_sum(r, static_cast<float*>(data[std::size_t(r)].raw()), count,
                                 ReduceAlgorithm::tree);
        }));
        for (int r = 0; r < ranks; ++r) {
            const auto got = data[std::size_t(r)].to_vector();
            for (std::size_t i = 0; i < count; ++i)
                ASSERT_EQ(got[i], pairwise(x, 0, std::size_t(ranks), i))
                    << ranks << " ranks, rank " << r << ", element " << i;
            // In and out through the device's own copies, into its pinned host memory.
            EXPECT_EQ(s.gpus[std::size_t(r)]->bytes_from_host, count * sizeof(float));
            EXPECT_GE(s.gpus[std::size_t(r)]->pinned->allocator().stats().peak,
                      count * sizeof(float));
        }
    }
}

TEST(CommunicatorStaged, BroadcastAndReduce) {
    StandIns s(3);
    const auto x = make_inputs(3, 100, 5);
    auto data = s.hold(x);
    const auto comm = make_device_communicator(s.devices(), true);
    expect_no_errors(run_ranks(3, [&](int r) {
        comm->broadcast(r, static_cast<float*>(data[std::size_t(r)].raw()), 100, 2);
    }));
    for (const auto& t : data) EXPECT_EQ(t.to_vector(), x[2]);

    data = s.hold(x);
    expect_no_errors(run_ranks(3, [&](int r) {
        comm->reduce_sum(r, static_cast<float*>(data[std::size_t(r)].raw()), 100, 1);
    }));
    const auto sum = data[1].to_vector();
    for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(sum[i], pairwise(x, 0, 3, i));
    EXPECT_EQ(data[0].to_vector(), x[0]);  // a rank that is not the root keeps its data
}

// Under MPI a process holds ranks first_rank.. of a job-wide communicator: here ranks 2 and 3
// of 4 are staged from stand-ins, while 0 and 1 (another "process") call the host one directly.
TEST(CommunicatorStaged, RanksFromAnOffset) {
    StandIns s(2);
    const auto x = make_inputs(4, 64, 3);
    auto data = s.hold({x[2], x[3]});
    std::shared_ptr<Communicator> host = make_inproc_communicator(4);
    StagedCommunicator staged(s.devices(), host, 2);
    EXPECT_EQ(staged.size(), 4);
    std::vector<std::vector<float>> plain{x[0], x[1]};
    expect_no_errors(run_ranks(4, [&](int r) {
        if (r < 2)
            host->all_reduce_sum(r, plain[std::size_t(r)].data(), 64, ReduceAlgorithm::tree);
        else
            staged.all_reduce_sum(r, static_cast<float*>(data[std::size_t(r - 2)].raw()), 64,
                                  ReduceAlgorithm::tree);
    }));
    for (std::size_t i = 0; i < 64; ++i) {
        ASSERT_EQ(data[0].to_vector()[i], pairwise(x, 0, 4, i));
        ASSERT_EQ(plain[1][i], pairwise(x, 0, 4, i));
    }
    float value = 0;
    // Rank 1 is the other side's, not staged here; ranks 3 and 4 do not fit 4.
    EXPECT_THROW(staged.all_reduce_sum(1, &value, 1, ReduceAlgorithm::tree), Error);
    EXPECT_THROW(StagedCommunicator(s.devices(), host, 3), Error);
}

// A rank that fails elsewhere aborts: the ranks waiting in the host communicator wake.
TEST(CommunicatorStaged, AbortWakesTheOthers) {
    StandIns s(3);
    auto data = s.hold(make_inputs(3, 16, 1));
    const auto comm = make_device_communicator(s.devices(), true);
    const auto errors = run_ranks(3, [&](int r) {
        if (r == 0) {
            comm->abort("rank 0 failed");
            return;
        }
        comm->all_reduce_sum(r, static_cast<float*>(data[std::size_t(r)].raw()), 16,
                             ReduceAlgorithm::tree);
    });
    for (int r = 1; r < 3; ++r) {
        ASSERT_TRUE(errors[std::size_t(r)]);
        try {
            std::rethrow_exception(errors[std::size_t(r)]);
        } catch (const CancelledError& e) {
            EXPECT_NE(std::string(e.what()).find("rank 0 failed"), std::string::npos) << e.what();
        }
    }
    comm->reset();
    expect_no_errors(run_ranks(3, [&](int r) { comm->barrier(r); }));
}

}  // namespace
}  // namespace tandem::test

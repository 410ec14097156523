// HierarchicalCommunicator's logic in one process: P simulated processes, each a
// HierarchicalCommunicator over L local threads, joined by one in-process communicator of P
// ranks in the place of MPI. Plus what the MPI side does without an MPI job.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "base/error.h"
#include "device/cpu/cpu_device.h"
#include "engine/engine.h"
#include "layers/linear.h"
#include "parallel/comm_hierarchical.h"
#include "parallel/comm_mpi.h"
#include "parallel/mpi_world.h"
#include "support/collectives.h"

namespace tandem::test {
namespace {

struct Job {
    Job(int processes, int local) : local(local), cross(make_inproc_communicator(processes)) {
        for (int p = 0; p < processes; ++p)
            comms.push_back(std::make_unique<HierarchicalCommunicator>(local, cross, p));
    }
    int ranks() const { return local * static_cast<int>(comms.size()); }
    // Runs fn(communicator, global rank) on one thread per global rank; returns each rank's
    // error message ("" when it returned).
    std::vector<std::string> run(const std::function<void(Communicator&, int)>& fn) {
        std::vector<std::string> errors(static_cast<std::size_t>(ranks()));
        std::vector<std::thread> threads;
        for (int r = 0; r < ranks(); ++r)
            threads.emplace_back([&, r] {
                try {
                    fn(*comms[static_cast<std::size_t>(r / local)], r);
                } catch (const std::exception& e) {
                    errors[static_cast<std::size_t>(r)] = e.what();
                }
            });
        for (auto& t : threads) t.join();
        return errors;
    }
    int local;
    std::shared_ptr<Communicator> cross;
    std::vector<std::unique_ptr<HierarchicalCommunicator>> comms;
};

void expect_no_error_texts(const std::vector<std::string>& errors) {
    for (std::size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// Deterministic mode's claim: with L a power of two, the hierarchical tree is the canonical
// pairwise tree over all P * L ranks, bit for bit (also for P not a power of two).
TEST(CommunicatorHierarchical, TreeIsThePairwiseSumOverEveryGroup) {
    for (auto [processes, local] :
         {std::pair{2, 2}, std::pair{3, 2}, std::pair{2, 4}, std::pair{3, 1}}) {
        Job job(processes, local);
        const std::size_t count = 1000;
        auto x = make_inputs(job.ranks(), count, 7);
        const auto inputs = x;
        expect_no_error_texts(job.run([&](Communicator& c, int r) {
            c.all_reduce_sum(r, x[static_cast<std::size_t>(r)].data(), count,
                             ReduceAlgorithm::tree);
        }));
        for (std::size_t i = 0; i < count; ++i) {
            const float expected = pairwise(inputs, 0, inputs.size(), i);
            for (int r = 0; r < job.ranks(); ++r)
                ASSERT_EQ(x[static_cast<std::size_t>(r)][i], expected)
                    << processes << " x " << local << ", rank " << r << ", element " << i;
        }
    }
}

TEST(CommunicatorHierarchical, RingSumsOnEveryRank) {
    Job job(2, 3);
    const std::size_t count = 333;
    auto x = make_inputs(job.ranks(), count, 3);
    const auto inputs = x;
    expect_no_error_texts(job.run([&](Communicator& c, int r) {
        c.all_reduce_sum(r, x[static_cast<std::size_t>(r)].data(), count, ReduceAlgorithm::ring);
    }));
    for (std::size_t i = 0; i < count; ++i) {
        double sum = 0;
        for (const auto& v : inputs) sum += v[i];
        for (const auto& v : x) {
            ASSERT_NEAR(v[i], sum, 1e-3) << "element " << i;
            ASSERT_EQ(v[i], x[0][i]) << "every rank holds the same bits";
        }
    }
}

TEST(CommunicatorHierarchical, BroadcastAndReduceFromAnyRoot) {
    Job job(2, 2);
    for (int root = 0; root < job.ranks(); ++root) {
        std::vector<std::vector<float>> x(4, std::vector<float>(5));
        for (int r = 0; r < 4; ++r)
            for (auto& e : x[static_cast<std::size_t>(r)]) e = static_cast<float>(10 * r + 1);
        expect_no_error_texts(job.run([&](Communicator& c, int r) {
            c.broadcast(r, x[static_cast<std::size_t>(r)].data(), 5, root);
        }));
        for (const auto& v : x)
            EXPECT_EQ(v[4], static_cast<float>(10 * root + 1)) << "root " << root;
        expect_no_error_texts(job.run([&](Communicator& c, int r) {
            for (auto& e : x[static_cast<std::size_t>(r)]) e = static_cast<float>(r + 1);
            c.reduce_sum(r, x[static_cast<std::size_t>(r)].data(), 5, root);
        }));
        EXPECT_EQ(x[static_cast<std::size_t>(root)][0], 10.0f) << "root " << root;
        expect_no_error_texts(job.run([&](Communicator& c, int r) { c.barrier(r); }));
    }
}

TEST(CommunicatorHierarchical, BytesSentCountTheCrossLegOnLocalRankZero) {
    Job job(2, 2);
    std::vector<std::vector<float>> x(4, std::vector<float>(100, 1.0f));
    expect_no_error_texts(job.run([&](Communicator& c, int r) {
        c.all_reduce_sum(r, x[static_cast<std::size_t>(r)].data(), 100, ReduceAlgorithm::tree);
    }));
    // Local: rank 1 sends its 100 floats to rank 0, rank 0 broadcasts 100 to rank 1. Cross
    // (tree): process 1's rank 0 sends 100, process 0's broadcasts 100.
    EXPECT_EQ(job.comms[0]->bytes_sent(0), 400u + 400u);
    EXPECT_EQ(job.comms[0]->bytes_sent(1), 400u);
    EXPECT_EQ(job.comms[1]->bytes_sent(2), 400u + 400u);
    EXPECT_EQ(x[3][0], 4.0f);
}

TEST(CommunicatorHierarchical, AbortReachesTheOtherProcessesWaiters) {
    Job job(2, 2);
    std::vector<float> data(4, 1.0f);
    std::vector<std::vector<float>> x(4, data);
    // Rank 3 never joins: it aborts. Ranks 0..2 wait in the local or cross leg and must wake.
    const auto errors = job.run([&](Communicator& c, int r) {
        if (r == 3) {
            c.abort("rank 3 failed on purpose");
            return;
        }
        c.all_reduce_sum(r, x[static_cast<std::size_t>(r)].data(), 4, ReduceAlgorithm::ring);
    });
    for (int r = 0; r < 3; ++r)
        EXPECT_NE(errors[static_cast<std::size_t>(r)].find("rank 3 failed on purpose"),
                  std::string::npos)
            << "rank " << r << ": " << errors[static_cast<std::size_t>(r)];
    for (auto& c : job.comms) c->reset();
    expect_no_error_texts(job.run([&](Communicator& c, int r) {
        c.all_reduce_sum(r, x[static_cast<std::size_t>(r)].data(), 4, ReduceAlgorithm::ring);
    }));
}

TEST(CommunicatorHierarchical, RankOfAnotherProcessIsAConfigError) {
    Job job(2, 2);
    float v = 0;
    EXPECT_THROW(job.comms[0]->barrier(2), ConfigError);
    EXPECT_THROW(job.comms[1]->all_reduce_sum(1, &v, 1, ReduceAlgorithm::ring), ConfigError);
    EXPECT_THROW(HierarchicalCommunicator(2, job.cross, 2), ConfigError);
}

TEST(CommunicatorMpi, BinomialBroadcastFanOut) {
    EXPECT_EQ(binomial_children(0, 1), 0);
    EXPECT_EQ(binomial_children(0, 2), 1);
    EXPECT_EQ(binomial_children(0, 8), 3);  // 1, 2, 4
    EXPECT_EQ(binomial_children(4, 8), 2);  // 5, 6
    EXPECT_EQ(binomial_children(6, 8), 1);  // 7
    EXPECT_EQ(binomial_children(1, 8), 0);
    EXPECT_EQ(binomial_children(4, 6), 1);  // 5
    int sends = 0;
    for (int r = 0; r < 13; ++r) sends += binomial_children(r, 13);
    EXPECT_EQ(sends, 12) << "every rank but the root receives once";
}

// Without mpirun (tests run as one plain process) the world is one process and nothing
// needs MPI; asking for an MPI engine says how to get one.
TEST(CommunicatorMpi, OutsideAnMpiJob) {
    if (mpi::initialized()) GTEST_SKIP() << "this test process runs inside an MPI job";
    EXPECT_EQ(mpi::rank(), 0);
    EXPECT_EQ(mpi::size(), 1);
    EXPECT_EQ(mpi::all_gather(42), std::vector<std::int64_t>{42});
    double v[2] = {1, 2};
    mpi::all_reduce(v, 2, "max");
    EXPECT_EQ(v[1], 2.0);
    EXPECT_THROW(mpi::all_reduce(v, 2, "mean"), ConfigError);
    mpi::abort_job("nothing to end: one process");  // returns: the caller throws as usual
    EXPECT_THROW(MpiCommunicator(), ConfigError);

    EngineOptions o;
    o.net = std::make_shared<Sequential>();
    o.net->add(std::make_shared<Linear>(LinearOptions{4, 2}));
    o.devices.push_back(std::make_shared<CpuDevice>(0, CpuDeviceOptions{std::size_t(1) << 26, 1}));
    o.parallel.mpi = true;
    try {
        Engine engine(o);
        ADD_FAILURE() << "an MPI engine outside an MPI job";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("mpirun"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace tandem::test

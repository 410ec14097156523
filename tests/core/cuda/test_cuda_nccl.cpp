// The NCCL communicator against a CPU reference, and two GPUs computing what one does: the
// gradient of a data-parallel Linear + loss step, all-reduced, equals the whole batch's on one
// GPU. Skipped, saying why, with fewer than two GPUs.
#include <memory>
#include <string>
#include <thread>

#include "parallel/comm_nccl.h"
#include "support/cuda_parity.h"

namespace tandem::test {
namespace {

// Runs f(rank) on every rank's device worker at once and rethrows the first failure.
void on_ranks(int ranks, const std::function<void(int)>& f) {
    std::vector<std::future<void>> done;
    for (int r = 0; r < ranks; ++r)
        done.push_back(cuda_test_device(r).worker().submit([&f, r] { f(r); }));
    for (auto& d : done) d.get();
}

TEST(CudaNccl, AllReduceBroadcastReduceMatchTheCpu) {
    TANDEM_REQUIRE_GPUS(2);
    const int ranks = 2;
    std::vector<Device*> devices{&cuda_test_device(0), &cuda_test_device(1)};
    auto comm = make_nccl_communicator(devices);
    EXPECT_EQ(comm->size(), 2);
    const std::int64_t n = 100003;
    std::vector<Tensor> host, data;
    for (int r = 0; r < ranks; ++r) {
        host.push_back(random_tensor({n}, cpu(), 50 + std::uint64_t(r)));
        data.push_back(host.back().to(*devices[std::size_t(r)]));
    }
    std::vector<float> sum(std::size_t(n), 0.f);
    for (const auto& h : host) {
        const auto v = h.to_vector();
        for (std::size_t i = 0; i < v.size(); ++i) sum[i] += v[i];
    }
    on_ranks(ranks, [&](int r) {
        comm->all_reduce_sum(r, static_cast<float*>(data[std::size_t(r)].raw()), std::size_t(n),
                             ReduceAlgorithm::ring);
    });
    for (int r = 0; r < ranks; ++r) {
        const auto got = data[std::size_t(r)].to_vector();
        for (std::size_t i = 0; i < got.size(); i += 997)
            ASSERT_NEAR(got[i], sum[i], 1e-5) << "rank " << r << " element " << i;
    }
    EXPECT_GT(comm->bytes_sent(0), 0u);

    const auto root_values = host[1].to_vector();
    for (int r = 0; r < ranks; ++r)
        data[std::size_t(r)] = host[std::size_t(r)].to(*devices[std::size_t(r)]);
    on_ranks(ranks, [&](int r) {
        comm->broadcast(r, static_cast<float*>(data[std::size_t(r)].raw()), std::size_t(n), 1);
    });
    EXPECT_EQ(data[0].to_vector(), root_values);

    for (int r = 0; r < ranks; ++r)
        data[std::size_t(r)] = host[std::size_t(r)].to(*devices[std::size_t(r)]);
    on_ranks(ranks, [&](int r) {
        comm->reduce_sum(r, static_cast<float*>(data[std::size_t(r)].raw()), std::size_t(n), 0);
    });
    const auto reduced = data[0].to_vector();
    for (std::size_t i = 0; i < reduced.size(); i += 997) ASSERT_NEAR(reduced[i], sum[i], 1e-5);

    on_ranks(ranks, [&](int r) { comm->barrier(r); });
}

TEST(CudaNccl, AbortCancelsAndResetRecovers) {
    TANDEM_REQUIRE_GPUS(2);
    std::vector<Device*> devices{&cuda_test_device(0), &cuda_test_device(1)};
    auto comm = make_nccl_communicator(devices);
    comm->abort("rank 1 failed: test");
    try {
        comm->barrier(0);
        ADD_FAILURE() << "an aborted communicator ran a collective";
    } catch (const CancelledError& e) {
        EXPECT_NE(std::string(e.what()).find("rank 1 failed: test"), std::string::npos);
    }
    comm->reset();
    on_ranks(2, [&](int r) { comm->barrier(r); });
}

// The form processes use: ranks joined from one unique id. Here two "processes" in one: each
// thread joins its rank (the calls block until both have), then a third communicator holds
// both ranks in one call, as a process driving two GPUs makes it. Both sum like the CPU; an
// abort runs the caller's hook (under MPI: ending the job) with the reason.
TEST(CudaNccl, RanksJoinedFromOneIdAsProcessesDo) {
    TANDEM_REQUIRE_GPUS(2);
    const NcclId id = nccl_unique_id();
    std::vector<std::unique_ptr<Communicator>> apart(2);
    std::string hooked;
    {
        std::thread other(
            [&] { apart[1] = make_nccl_communicator(id, 2, 1, {&cuda_test_device(1)}); });
        apart[0] = make_nccl_communicator(id, 2, 0, {&cuda_test_device(0)},
                                          [&](const std::string& why) { hooked = why; });
        other.join();
    }
    auto together = make_nccl_communicator(nccl_unique_id(), 2, 0,
                                           {&cuda_test_device(0), &cuda_test_device(1)});
    const std::int64_t n = 4099;
    for (int form = 0; form < 2; ++form) {
        SCOPED_TRACE(form == 0 ? "one rank per communicator" : "both ranks in one");
        std::vector<Tensor> data;
        for (int r = 0; r < 2; ++r)
            data.push_back(random_tensor({n}, cpu(), 70 + std::uint64_t(r)));
        std::vector<float> sum = data[0].to_vector();
        const auto second = data[1].to_vector();
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += second[i];
        for (int r = 0; r < 2; ++r)
            data[std::size_t(r)] = data[std::size_t(r)].to(cuda_test_device(r));
        on_ranks(2, [&](int r) {
            Communicator& comm = form == 0 ? *apart[std::size_t(r)] : *together;
            comm.all_reduce_sum(r, static_cast<float*>(data[std::size_t(r)].raw()), std::size_t(n),
                                ReduceAlgorithm::ring);
        });
        for (int r = 0; r < 2; ++r) {
            const auto got = data[std::size_t(r)].to_vector();
            for (std::size_t i = 0; i < got.size(); i += 97)
                ASSERT_NEAR(got[i], sum[i], 1e-5) << "rank " << r << " element " << i;
        }
    }
    apart[0]->abort("rank 0 failed: test");
    EXPECT_EQ(hooked, "rank 0 failed: test");
    EXPECT_THROW(apart[0]->reset(), ConfigError);  // a new id is needed, not the same one again
    apart[1]->abort("test over");  // its peer is gone: no collective teardown with it
}

// Data parallel on two GPUs = one GPU on the whole batch: each GPU takes half the batch, the
// weight gradients (loss scaled by the whole batch) are all-reduced.
TEST(CudaNccl, TwoGpusComputeWhatOneDoes) {
    TANDEM_REQUIRE_GPUS(2);
    const std::int64_t batch = 8, in = 12, out = 5;
    const Tensor x = random_tensor({batch, in}, cpu(), 60);
    const Tensor w = random_tensor({out, in}, cpu(), 61);
    const Tensor b = random_tensor({out}, cpu(), 62);
    Tensor labels = Tensor::empty({batch}, cpu(), DType::i32);
    for (int i = 0; i < batch; ++i) labels.data<int>()[i] = i % int(out);

    // dW on `device` for samples [begin, begin + count), loss scaled by 1 / batch.
    auto gradient = [&](Device& device, std::int64_t begin, std::int64_t count) {
        auto linear = kernel_on<LinearKernel>(device, LinearConfig{count, in, out, true});
        auto loss =
            kernel_on<SoftmaxCrossEntropyKernel>(device, SoftmaxCrossEntropyConfig{count, out});
        const Tensor xs = x.narrow_batch(begin, count).to(device);
        const Tensor ys = labels.narrow_batch(begin, count).to(device);
        Tensor logits = Tensor::empty({count, out}, device),
               p = Tensor::empty({count, out}, device);
        linear->forward(xs, w.to(device), b.to(device), logits);
        loss->forward(logits, ys, 0.f, p);
        Tensor dlogits = Tensor::empty({count, out}, device);
        loss->backward(p, ys, 0.f, 1.f / float(batch), dlogits);
        Tensor dw = Tensor::zeros({out, in}, device), db = Tensor::zeros({out}, device);
        linear->backward_weights(xs, dlogits, dw, db);
        return dw;
    };
    const Tensor whole = gradient(cuda_test_device(0), 0, batch);
    std::vector<Tensor> parts{gradient(cuda_test_device(0), 0, batch / 2),
                              gradient(cuda_test_device(1), batch / 2, batch / 2)};
    auto comm = make_nccl_communicator({&cuda_test_device(0), &cuda_test_device(1)});
    on_ranks(2, [&](int r) {
        comm->all_reduce_sum(r, static_cast<float*>(parts[std::size_t(r)].raw()),
                             std::size_t(out * in), ReduceAlgorithm::tree);
    });
    expect_near(parts[0], whole, 1e-5, "rank 0 gradient");
    expect_near(parts[1], whole, 1e-5, "rank 1 gradient");
}

}  // namespace
}  // namespace tandem::test

// Gradient all-reduce during the last backward (ParallelOptions::overlap_backward): buckets
// whose layers are done are reduced on the stage's lane while the rest of its backward runs;
// the sums are those of reducing after backward, bit for bit; a failure mid-backward, with a
// replica's lane waiting in a collective, stops the step without a hang.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "base/error.h"
#include "device/cpu/cpu_device.h"
#include "engine/engine.h"
#include "io/trace.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/pool2d.h"
#include "layers/relu.h"
#include "support/toy_batch.h"

namespace tandem::test {
namespace {

// An identity layer whose backward can stop and look: with `trace`, it returns only once an
// all-reduce span of its own device's lane has been recorded (proof that a bucket of the layers
// after it was reduced while this backward had not finished), failing after a deadline; with
// `fail_on` naming a device, its backward there throws once.
class Probe final : public Layer {
public:
    struct Shared {
        std::shared_ptr<Trace> trace;
        std::string fail_on;
        std::atomic<bool> failed{false};
    };
    explicit Probe(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

    std::string_view kind() const override { return "Probe"; }
    LayerPtr clone() const override { return finish_clone(std::make_shared<Probe>(shared_)); }
    Shape output_shape(const Shape& input) const override { return input; }
    Tensor forward(const Tensor& x, Pass&) override { return x; }
    Tensor backward(const Tensor&, const Tensor& dy, Pass& pass) override {
        if (pass.device.name() == shared_->fail_on && !shared_->failed.exchange(true))
            throw DataError("injected failure in backward on " + pass.device.name());
        if (shared_->trace) wait_for_reduction(pass.device.name() + " all-reduce");
        return dy;
    }

private:
    void wait_for_reduction(const std::string& lane) const {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        std::size_t seen = 0;
        while (std::chrono::steady_clock::now() < deadline) {
            if (shared_->trace->size() != seen) {
                seen = shared_->trace->size();
                for (const auto& e : shared_->trace->events())
                    if (e.track == lane && e.category == "allreduce") return;
            }
            std::this_thread::yield();
        }
        throw Error("no all-reduce on '" + lane + "' finished while backward was still running");
    }

    std::shared_ptr<Shared> shared_;
};

// Parameters on both sides of the probe, so some buckets are ready before it and some after.
std::shared_ptr<Sequential> probed_net(std::shared_ptr<Probe::Shared> shared) {
    Conv2dOptions c;
    c.in_channels = 1, c.out_channels = 4, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    Pool2dOptions p;
    p.kernel_h = p.kernel_w = 2;
    return std::make_shared<Sequential>(std::vector<LayerPtr>{
        std::make_shared<Conv2d>(c), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(p),
        std::make_shared<Probe>(std::move(shared)), std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{4 * 4 * 4, 16, true, "kaiming"}),
        std::make_shared<ReLU>(), std::make_shared<Linear>(LinearOptions{16, 3, true, "kaiming"})});
}

EngineOptions options(int groups, int stages, int micro_batches,
                      std::shared_ptr<Probe::Shared> shared) {
    EngineOptions o;
    o.net = probed_net(std::move(shared));
    for (int i = 0; i < groups * stages; ++i)
        o.devices.push_back(
            std::make_shared<CpuDevice>(i, CpuDeviceOptions{std::size_t(1) << 30, 1}));
    o.optimizer.sgd = SgdOptions{0.05f, 0.9f, 0.f, 1e-4f, true};
    o.seed = 5;
    o.layout = Layout::channels_last;  // (a contiguous conv on a worker thread leaks inside oneDNN)
    o.parallel.groups = groups, o.parallel.stages = stages,
    o.parallel.micro_batches = micro_batches;
    o.parallel.pipeline = PipelineSchedule::one_f_one_b;
    o.parallel.bucket_bytes = 64;  // every gradient a bucket of its own
    return o;
}

std::vector<std::vector<float>> trained(EngineOptions o, int steps) {
    Engine engine(std::move(o));
    for (int s = 0; s < steps; ++s) {
        const Batch b = make_batch(s, 16);
        engine.step(b.images, b.labels);
    }
    std::vector<std::vector<float>> w;
    for (auto& p : named_parameters(engine.net())) w.push_back(p.parameter->value.to_vector());
    return w;
}

TEST(Overlap, ABucketIsReducedWhileBackwardRuns) {
    auto shared = std::make_shared<Probe::Shared>();
    shared->trace = std::make_shared<Trace>();
    EngineOptions o = options(2, 1, 1, shared);  // one micro-batch: its backward is the last
    o.trace = shared->trace;
    Engine engine(o);
    const Batch b = make_batch(0, 16);
    // Without the overlap the probe would wait for a reduction that only comes after it.
    EXPECT_NO_THROW(engine.step(b.images, b.labels));
    int lane_spans = 0;
    for (const auto& e : o.trace->events())
        lane_spans += e.track == "cpu:0 all-reduce" && e.category == "allreduce";
    EXPECT_EQ(lane_spans, 6) << "a bucket per gradient";
}

TEST(Overlap, SumsEqualReducingAfterBackward) {
    for (auto [g, s, m] : {std::tuple{2, 1, 1}, std::tuple{2, 2, 4}}) {
        EngineOptions during = options(g, s, m, std::make_shared<Probe::Shared>());
        EngineOptions after = options(g, s, m, std::make_shared<Probe::Shared>());
        after.parallel.overlap_backward = false;
        EXPECT_EQ(trained(during, 3), trained(after, 3)) << g << "x" << s << "x" << m;
    }
}

// Group 1 fails in the middle of its backward: group 0's lane is then waiting in the
// collective of the first convolution's bucket, which group 1 never posts.
TEST(Overlap, AFailureMidBackwardStopsEveryLane) {
    auto shared = std::make_shared<Probe::Shared>();
    shared->fail_on = "cpu:1";
    Engine engine(options(2, 1, 1, shared));
    const auto weights = [&] {
        std::vector<std::vector<float>> w;
        for (auto& p : named_parameters(engine.net())) w.push_back(p.parameter->value.to_vector());
        return w;
    };
    const auto before = weights();
    const Batch b = make_batch(0, 16);
    try {
        engine.step(b.images, b.labels);
        FAIL() << "expected the injected DataError";
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("injected"), std::string::npos) << e.what();
    }
    EXPECT_EQ(before, weights());
    EXPECT_NO_THROW(engine.step(b.images, b.labels));
    EXPECT_NE(before, weights());
}

}  // namespace
}  // namespace tandem::test

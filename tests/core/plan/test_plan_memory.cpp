// The simulator's memory accounting against the engine's measured peak, device by device, for
// one device and for pipelines under both schedules and with recomputation: within 15% (what is
// left out: the kernels' cached weight layouts and the allocator's other long-lived buffers,
// about 70 KB here, and the step's smaller transients).
#include <gtest/gtest.h>

#include "device/cpu/cpu_device.h"
#include "engine/engine.h"
#include "layers/conv2d.h"
#include "layers/cross_entropy.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "plan/measured_costs.h"
#include "plan/simulator.h"
#include "support/cpu_topology.h"
#include "support/toy_batch.h"

namespace tandem::test {
namespace {

std::shared_ptr<Sequential> memory_net() {
    Conv2dOptions c;
    c.in_channels = 1, c.out_channels = 16, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    Conv2dOptions d = c;
    d.in_channels = 16;
    return std::make_shared<Sequential>(std::vector<LayerPtr>{
        std::make_shared<Conv2d>(c), std::make_shared<ReLU>(), std::make_shared<Conv2d>(d),
        std::make_shared<ReLU>(), std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{16 * 8 * 8, 64, true, "kaiming"}),
        std::make_shared<ReLU>(), std::make_shared<Linear>(LinearOptions{64, 3, true, "kaiming"})});
}

TEST(PlanMemory, SimulatedPeakMatchesTheEngines) {
    const Shape sample({1, 8, 8});
    auto model = memory_net();
    const MeasuredCostModel costs(
        net_shapes(*model, sample), true,
        [&](int threads, std::int64_t batch, StepEnd) {
            CpuDevice device(50, CpuDeviceOptions{0, threads});
            auto copy = std::static_pointer_cast<Sequential>(model->clone());
            CrossEntropy loss;
            ProfileOptions po;
            po.layout = Layout::channels_last, po.warmup = 0, po.iterations = 1;
            return profile_net(*copy, loss, device, sample, batch, po);
        },
        [] {
            return MachineFigures{8.0, 0.01, 0.01, 0.01};
        });
    struct Case {
        int stages, micro;
        PipelineSchedule schedule;
        bool recompute;
    };
    for (const Case& k :
         {Case{2, 4, PipelineSchedule::gpipe, false},
          Case{2, 4, PipelineSchedule::one_f_one_b, false},
          Case{2, 4, PipelineSchedule::gpipe, true}, Case{1, 1, PipelineSchedule::gpipe, false},
          Case{1, 4, PipelineSchedule::gpipe, false}}) {
        Plan plan;
        plan.stages = k.stages, plan.micro_batches = k.micro, plan.schedule = k.schedule,
        plan.recompute = k.recompute;
        plan.batch = 64;
        if (k.stages == 2) plan.cuts = {4};
        const Simulation sim = simulate(plan, cpu_topology(k.stages, k.stages), costs);

        EngineOptions o;
        o.net = memory_net();
        for (int i = 0; i < k.stages; ++i)
            o.devices.push_back(std::make_shared<CpuDevice>(i, CpuDeviceOptions{0, 1}));
        o.optimizer.sgd = SgdOptions{0.01f, 0.9f, 0.f, 0.f, false};
        o.layout = Layout::channels_last;
        o.parallel.stages = k.stages, o.parallel.micro_batches = k.micro,
        o.parallel.pipeline = k.schedule;
        o.parallel.recompute = {k.recompute};
        if (k.stages == 2) o.parallel.cuts = {4};
        Engine engine(std::move(o));
        // The first step creates the momentum buffers; the second is the steady state.
        Batch b = make_batch(0, 64);
        engine.step(b.images, b.labels);
        for (int s = 0; s < k.stages; ++s) engine.stage_device(0, s).allocator().reset_peak();
        b = make_batch(1, 64);
        engine.step(b.images, b.labels);
        for (int s = 0; s < k.stages; ++s) {
            const double measured = double(engine.stage_device(0, s).allocator().stats().peak);
            const double simulated = double(sim.devices[static_cast<std::size_t>(s)].peak_bytes);
            EXPECT_NEAR(simulated / measured, 1.0, 0.15)
                << plan.label() << " stage " << s << ": simulated " << simulated << " B, measured "
                << measured << " B";
        }
    }
}

}  // namespace
}  // namespace tandem::test

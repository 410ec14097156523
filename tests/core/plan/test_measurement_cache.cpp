// The measured cost model's figures kept between runs: written and read back exactly; a second
// model with the same key measures nothing and answers as the first did; a file for another key,
// damaged or cut short is measured afresh, never trusted; the key names what figures depend on.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>

#include "base/atomic_file.h"
#include "base/error.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "plan/measured_costs.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

std::shared_ptr<Sequential> small_net(std::int64_t width = 8) {
    Conv2dOptions c;
    c.in_channels = 1, c.out_channels = width, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    return std::make_shared<Sequential>(std::vector<LayerPtr>{
        std::make_shared<Conv2d>(c), std::make_shared<ReLU>(), std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{width * 8 * 8, 10, true, "kaiming"})});
}

// A profile whose every figure differs, with values that print with many digits.
NetProfile profile_of(std::int64_t batch) {
    NetProfile p;
    p.batch = batch, p.input = Shape({batch, 1, 8, 8});
    p.step_ms = 1.0 / 3 * double(batch), p.update_ms = 0.1 / 7, p.train_flops = 1e9 / 3;
    p.peak_bytes = 123456789;
    for (int i = 0; i < 4; ++i) {
        LayerProfile l;
        l.name = "layer" + std::to_string(i), l.kind = "Kind", l.options = "a \"quoted\", 3x3";
        l.output = Shape({batch, 8, 8, 8}), l.parameters = 80 + i;
        l.forward_ms = 0.01 * (i + 1) / 3, l.backward_ms = 0.02 * (i + 1) / 7;
        l.flops = 12345.678 * i, l.memory = {std::size_t(10 + i), std::size_t(20 + i), 30};
        l.parameter_tensor_bytes = {std::size_t(64 + i), 4};
        l.transient_bytes = 7, l.kept_input_bytes = 9;
        p.layers.push_back(l);
    }
    return p;
}

void expect_same(const NetProfile& a, const NetProfile& b) {
    EXPECT_EQ(a.batch, b.batch);
    EXPECT_EQ(a.input.dims(), b.input.dims());
    EXPECT_EQ(a.step_ms, b.step_ms);
    EXPECT_EQ(a.update_ms, b.update_ms);
    EXPECT_EQ(a.train_flops, b.train_flops);
    EXPECT_EQ(a.peak_bytes, b.peak_bytes);
    ASSERT_EQ(a.layers.size(), b.layers.size());
    for (std::size_t i = 0; i < a.layers.size(); ++i) {
        const LayerProfile &x = a.layers[i], &y = b.layers[i];
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.kind, y.kind);
        EXPECT_EQ(x.options, y.options);
        EXPECT_EQ(x.output.dims(), y.output.dims());
        EXPECT_EQ(x.parameters, y.parameters);
        EXPECT_EQ(x.forward_ms, y.forward_ms);
        EXPECT_EQ(x.backward_ms, y.backward_ms);
        EXPECT_EQ(x.flops, y.flops);
        EXPECT_EQ(x.memory.parameter_bytes, y.memory.parameter_bytes);
        EXPECT_EQ(x.memory.output_bytes, y.memory.output_bytes);
        EXPECT_EQ(x.memory.saved_bytes, y.memory.saved_bytes);
        EXPECT_EQ(x.parameter_tensor_bytes, y.parameter_tensor_bytes);
        EXPECT_EQ(x.transient_bytes, y.transient_bytes);
        EXPECT_EQ(x.kept_input_bytes, y.kept_input_bytes);
    }
}

Measurements full_measurements() {
    Measurements m;
    m.profiles[{1, 4}] = profile_of(4);
    m.profiles[{2, 16}] = profile_of(16);
    m.slowdowns[{2, 4}] = {1.0 / 0.7, std::nullopt};
    m.slowdowns[{2, 16}] = {1.25, 1.0 + 1.0 / 3};
    m.update_slowdowns[2] = 1.0 + 1.0 / 9;
    m.all_reduce[{2, ReduceAlgorithm::tree}] = {0.01 / 3, 1e-7 / 3};
    m.machine = MachineFigures{6.9 / 7, 0.008 / 3, 0.041, 0.632 / 11};
    m.measured_at = "2026-11-27T16:13:10Z";
    return m;
}

TEST(MeasurementCache, FiguresReadBackExactly) {
    const Measurements m = full_measurements();
    const auto back =
        parse_measurements(measurements_json(m, "key\nof two lines"), "key\nof two lines");
    ASSERT_TRUE(back);
    ASSERT_EQ(back->profiles.size(), 2u);
    expect_same(back->profiles.at({1, 4}), m.profiles.at({1, 4}));
    expect_same(back->profiles.at({2, 16}), m.profiles.at({2, 16}));
    EXPECT_EQ(back->slowdowns.at({2, 4}).all, 1.0 / 0.7);
    EXPECT_FALSE(back->slowdowns.at({2, 4}).over);
    EXPECT_EQ(back->slowdowns.at({2, 16}).over.value_or(0), 1.0 + 1.0 / 3);
    EXPECT_EQ(back->update_slowdowns.at(2), 1.0 + 1.0 / 9);
    EXPECT_EQ(back->all_reduce.at({2, ReduceAlgorithm::tree}).latency_ms, 0.01 / 3);
    EXPECT_EQ(back->all_reduce.at({2, ReduceAlgorithm::tree}).ms_per_byte, 1e-7 / 3);
    ASSERT_TRUE(back->machine);
    EXPECT_EQ(back->machine->copy_gbs, 6.9 / 7);
    EXPECT_EQ(back->machine->crowded_handoff_ms, 0.632 / 11);
    EXPECT_EQ(back->measured_at, m.measured_at);
}

// Whatever is wrong with a file, it is not used: another key, cut short anywhere, a figure of
// the wrong kind or out of range, not JSON at all.
TEST(MeasurementCache, AFileForAnotherKeyOrDamagedIsNotUsed) {
    const std::string text = measurements_json(full_measurements(), "the key");
    EXPECT_TRUE(parse_measurements(text, "the key"));
    EXPECT_FALSE(parse_measurements(text, "another key"));
    for (std::size_t cut = 0; cut + 2 < text.size(); cut += 7)
        EXPECT_FALSE(parse_measurements(text.substr(0, cut), "the key")) << "cut at " << cut;
    const auto with = [&](const std::string& from, const std::string& to) {
        std::string t = text;
        const auto at = t.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        return t.replace(at, from.size(), to);
    };
    EXPECT_FALSE(parse_measurements(with("\"batch\": 4", "\"batch\": \"4\""), "the key"));
    EXPECT_FALSE(parse_measurements(with("\"all\": 1.25", "\"all\": 0.5"), "the key"));
    EXPECT_FALSE(
        parse_measurements(with("\"algorithm\": \"tree\"", "\"algorithm\": \"x\""), "the key"));
    EXPECT_FALSE(parse_measurements(with("\"forward_ms\": ", "\"forward_ms\": -"), "the key"));
    EXPECT_FALSE(parse_measurements(with("\"threads\": 1", "\"threads\": 0"), "the key"));
    EXPECT_FALSE(parse_measurements("not json", "the key"));
    EXPECT_FALSE(parse_measurements("[]", "the key"));
}

// A cost model whose profiler counts its calls, kept in `file`.
struct CountedModel {
    std::atomic<int> calls{0}, probes{0};  // profiles taken; machine probes run
    MeasuredCostModel model;
    CountedModel(const std::string& key, const std::string& file, double step_ms,
                 CacheUse use = CacheUse::reuse)
        : model(
              net_shapes(*small_net(), Shape({1, 8, 8})), true,
              [this, step_ms](int, std::int64_t batch, StepEnd after_step) {
                  ++calls;
                  NetProfile p = profile_of(batch);
                  p.step_ms = step_ms * double(batch);
                  if (after_step) after_step();
                  return p;
              },
              [this] {
                  ++probes;
                  return MachineFigures{8.0, 0.01, 0.02, 0.03};
              },
              2, std::make_shared<const MeasurementCache>(key, use, file)) {}
};

TopologyDevice one_thread_cpu() {
    TopologyDevice cpu;
    cpu.name = "cpu0", cpu.model = "cpu", cpu.cpu = true, cpu.threads = 1;
    return cpu;
}

// The first model measures and keeps; a second with the same key and file measures nothing and
// answers as the first did (its own profiler would have said otherwise); what it measures anew
// is added to the file; another key measures afresh.
TEST(MeasurementCache, ASecondRunReusesWhatTheFirstMeasured) {
    TempDir dir;
    const std::string file = dir.file("m.json");
    const TopologyDevice cpu = one_thread_cpu();
    std::vector<LayerCost> first_costs;
    double first_contention = 0;
    {
        CountedModel first("key", file, 1.0);
        first.model.prefetch(cpu, {1, 4});
        first_costs = first.model.layer_costs(cpu, 4);
        first_contention = first.model.contention(2, 2, 4);
        EXPECT_EQ(first.calls, 2 * 2 + 6);  // two rounds of two sizes; three trials of two at once
        EXPECT_EQ(first.probes, 1);
        EXPECT_EQ(first.model.calibration().reused, 0u);
    }
    CountedModel second("key", file, 5.0);
    EXPECT_EQ(second.model.copy_gbs(), 8.0);
    EXPECT_EQ(second.probes, 0) << "the kept machine figures, not probed again";
    second.model.prefetch(cpu, {1, 4});
    const auto costs = second.model.layer_costs(cpu, 4);
    EXPECT_EQ(second.model.contention(2, 2, 4), first_contention);
    EXPECT_EQ(second.calls, 0);
    ASSERT_EQ(costs.size(), first_costs.size());
    for (std::size_t i = 0; i < costs.size(); ++i)
        EXPECT_EQ(costs[i].forward_ms, first_costs[i].forward_ms);
    EXPECT_NEAR(second.model.calibration().profiles.at(1).step_ms, 4.0, 1e-12);  // the first's
    const auto c = second.model.calibration();
    EXPECT_EQ(c.reused, 2u + 1 + 1);  // two profiles, one contention figure, the machine's
    EXPECT_EQ(c.cache_file, file);
    EXPECT_FALSE(c.cached_at.empty());
    second.model.prefetch(cpu, {2});
    EXPECT_EQ(second.calls, 2);
    CountedModel third("key", file, 9.0);
    third.model.prefetch(cpu, {1, 2, 4});
    EXPECT_EQ(third.calls, 0) << "batch 2 was kept by the second";
    CountedModel other("another key", file, 1.0);
    other.model.prefetch(cpu, {4});
    EXPECT_EQ(other.calls, 2);
}

// refresh measures what the file holds again and replaces it; none neither reads nor writes.
TEST(MeasurementCache, RefreshMeasuresAfreshAndNoneTouchesNothing) {
    TempDir dir;
    const std::string file = dir.file("m.json");
    const TopologyDevice cpu = one_thread_cpu();
    CountedModel("key", file, 1.0).model.prefetch(cpu, {4});
    CountedModel refresh("key", file, 3.0, CacheUse::refresh);
    refresh.model.prefetch(cpu, {4});
    EXPECT_EQ(refresh.calls, 2);
    EXPECT_EQ(refresh.model.calibration().reused, 0u);
    CountedModel none("key", file, 7.0, CacheUse::none);
    none.model.prefetch(cpu, {4, 8});
    EXPECT_EQ(none.calls, 4);
    CountedModel reuse("key", file, 9.0);
    reuse.model.prefetch(cpu, {4});
    EXPECT_EQ(reuse.calls, 0);
    EXPECT_NEAR(reuse.model.calibration().profiles.at(0).step_ms, 12.0, 1e-12) << "refresh's";
    reuse.model.prefetch(cpu, {8});
    EXPECT_EQ(reuse.calls, 2) << "none kept nothing";
    EXPECT_EQ(parse_cache_use("refresh"), CacheUse::refresh);
    EXPECT_THROW(parse_cache_use("always"), ConfigError);
}

// A damaged file costs a measurement, and the measurement replaces it.
TEST(MeasurementCache, ADamagedFileIsMeasuredAgainAndReplaced) {
    TempDir dir;
    const std::string file = dir.file("m.json");
    {
        std::ofstream out(file);
        out << "{\"format\": \"tandem measurements 1\", \"key\": \"key\", \"profi";
    }
    CountedModel model("key", file, 1.0);
    model.model.prefetch(one_thread_cpu(), {4});
    EXPECT_EQ(model.calls, 2);
    const std::vector<char> bytes = read_file(file);
    EXPECT_TRUE(parse_measurements(std::string_view(bytes.data(), bytes.size()), "key"));
}

// The key changes with what the figures depend on: the net's layers and widths, the sample, the
// options and the rounds; and names the CPU and the build.
TEST(MeasurementCache, TheKeyNamesWhatTheFiguresDependOn) {
    const auto key = [](std::shared_ptr<Sequential> net, const Shape& sample, int rounds,
                        const ProfileOptions& o) {
        return measurement_key(*net, net_shapes(*net, sample), true, o, rounds);
    };
    const ProfileOptions o;
    const std::string base = key(small_net(), Shape({1, 8, 8}), 3, o);
    EXPECT_EQ(base, key(small_net(), Shape({1, 8, 8}), 3, o));
    EXPECT_NE(base, key(small_net(16), Shape({1, 8, 8}), 3, o));
    EXPECT_NE(base, key(small_net(), Shape({1, 8, 8}), 2, o));
    ProfileOptions other = o;
    other.layout = Layout::channels_last;
    EXPECT_NE(base, key(small_net(), Shape({1, 8, 8}), 3, other));
    other = o;
    other.iterations = o.iterations + 1;
    EXPECT_NE(base, key(small_net(), Shape({1, 8, 8}), 3, other));
    auto reference = small_net();
    reference->at(0).set_kernel_impl("reference");
    EXPECT_NE(base, key(reference, Shape({1, 8, 8}), 3, o));
    EXPECT_NE(base.find("cpu: "), std::string::npos);
    EXPECT_NE(base.find("build: "), std::string::npos);
    EXPECT_NE(base.find(" bytes, modified "), std::string::npos) << base;
}

}  // namespace
}  // namespace tandem::test

// Model averaging's four algorithms (parallel/averaging.h) against their sequential
// definitions: k replicas trained one after another on one device, each a one-device engine on
// its shard of every batch, and every `every` steps the algorithm written out plainly on their
// weights and optimizer state (read and written through checkpoints). The engine with k groups
// on k CPU devices must hold the same weights in every group, and the same global model, block
// momentum or centre. Also: exact resume between two averages, and bad averaging_options by name.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "device/cpu/cpu_device.h"
#include "engine/engine.h"
#include "io/safetensors.h"
#include "layers/batch_norm2d.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/pool2d.h"
#include "layers/relu.h"
#include "parallel/parallel_schema.h"
#include "support/temp_dir.h"
#include "support/toy_batch.h"

namespace tandem::test {
namespace {

using Values = std::map<std::string, std::vector<float>>;

std::shared_ptr<Sequential> averaging_net() {
    Conv2dOptions c;
    c.in_channels = 1, c.out_channels = 4, c.kernel_h = c.kernel_w = 3, c.pad_h = c.pad_w = 1;
    c.bias = false;
    Pool2dOptions p;
    p.kernel_h = p.kernel_w = 2;
    return std::make_shared<Sequential>(std::vector<LayerPtr>{
        std::make_shared<Conv2d>(c), std::make_shared<BatchNorm2d>(BatchNorm2dOptions{4}),
        std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(p), std::make_shared<Flatten>(),
        std::make_shared<Linear>(LinearOptions{4 * 4 * 4, 12, true, "kaiming"}),
        std::make_shared<ReLU>(), std::make_shared<Linear>(LinearOptions{12, 3, true, "kaiming"})});
}

std::shared_ptr<Device> cpu_device(int index) {
    return std::make_shared<CpuDevice>(index, CpuDeviceOptions{std::size_t(1) << 30, 1});
}

constexpr int kShard = 6;  // samples per group and step

struct AveragingCase {
    AveragingAlgorithm algorithm = AveragingAlgorithm::plain;
    bool adam = false;
    double block_momentum = 0, block_lr = 1, elastic_alpha = 0;
    bool nesterov = true;
    std::string name() const {
        std::string n(averaging_algorithm_name(algorithm));
        if (adam) n += " (Adam)";
        if (algorithm == AveragingAlgorithm::bmuf)
            n += " eta " + std::to_string(block_momentum) + " zeta " + std::to_string(block_lr) +
                 (nesterov ? " nesterov" : " classic");
        if (algorithm == AveragingAlgorithm::easgd) n += " alpha " + std::to_string(elastic_alpha);
        return n;
    }
};

EngineOptions averaging_options(const AveragingCase& c, int groups, int every,
                                std::vector<std::shared_ptr<Device>> devices) {
    EngineOptions o;
    o.net = averaging_net();
    o.devices = std::move(devices);
    if (c.adam) {
        o.optimizer.kind = OptimizerKind::adam;
        o.optimizer.adam.lr = 0.01f;
    } else {
        o.optimizer.sgd = SgdOptions{0.05f, 0.9f, 0.f, 1e-4f, true};
    }
    o.seed = 21;
    o.layout = Layout::channels_last;
    o.parallel.groups = groups;
    if (groups > 1) {
        o.parallel.average_every = every;
        o.parallel.averaging = c.algorithm;
        o.parallel.block_momentum = c.block_momentum, o.parallel.block_lr = c.block_lr;
        o.parallel.block_nesterov = c.nesterov;
        o.parallel.elastic_alpha = c.elastic_alpha;
    }
    return o;
}

// Everything a checkpoint holds, as host vectors, and its metadata.
struct Snapshot {
    Values values;
    std::map<std::string, std::vector<std::int64_t>> shapes;
    std::map<std::string, std::string> meta;
};

Snapshot snapshot(Engine& engine, const std::string& path) {
    engine.save(path);
    SafetensorsContents file = load_safetensors(path, host_device());
    Snapshot s;
    for (auto& [name, t] : file.tensors) {
        s.values[name] = t.to_vector();
        s.shapes[name] = t.shape().dims();
    }
    s.meta = file.metadata;
    return s;
}

void restore(Engine& engine, const Snapshot& s, const std::string& path) {
    NamedTensors tensors;
    for (const auto& [name, v] : s.values)
        tensors.emplace_back(name, Tensor::from_vector(Shape(s.shapes.at(name)), host_device(), v));
    save_safetensors(path, tensors, s.meta);
    engine.load(path);
}

// The algorithm written out plainly over the replicas' checkpoints ("model.*", "optim.*").
// `global`, `move` and `center` are kept by the caller across averages (keyed "model.<name>").
void average_by_definition(const AveragingCase& c, std::vector<Snapshot>& replicas,
                           const std::set<std::string>& trained, Values& global, Values& move,
                           Values& center) {
    const auto k = static_cast<double>(replicas.size());
    auto mean = [&](const std::string& name) {
        std::vector<double> m(replicas[0].values.at(name).size(), 0.0);
        for (const auto& r : replicas)
            for (std::size_t j = 0; j < m.size(); ++j) m[j] += r.values.at(name)[j];
        for (auto& x : m) x /= k;
        return m;
    };
    for (const auto& [name, first] : replicas[0].values) {
        const bool model = name.rfind("model.", 0) == 0, optim = name.rfind("optim.", 0) == 0;
        if (!model && !optim) continue;
        const bool weight = model && trained.count(name.substr(6));
        const auto n = first.size();
        if (!weight || c.algorithm == AveragingAlgorithm::plain ||
            c.algorithm == AveragingAlgorithm::momentum) {
            // Buffers always; the optimizer's state only under 'momentum'.
            if (optim && c.algorithm != AveragingAlgorithm::momentum) continue;
            const auto m = mean(name);
            for (auto& r : replicas)
                for (std::size_t j = 0; j < n; ++j) r.values[name][j] = static_cast<float>(m[j]);
            continue;
        }
        if (c.algorithm == AveragingAlgorithm::bmuf) {
            const double eta = c.block_momentum > 0 ? c.block_momentum : 1.0 - 1.0 / k,
                         zeta = c.block_lr;
            auto& W = global[name];
            auto& D = move[name];
            const auto A = mean(name);
            for (std::size_t j = 0; j < n; ++j) {
                const double start = W[j] + (c.nesterov ? eta * D[j] : 0.0);
                const double G = A[j] - start;
                D[j] = static_cast<float>(eta * D[j] + zeta * G);
                W[j] = static_cast<float>(W[j] + D[j]);
                for (auto& r : replicas)
                    r.values[name][j] = static_cast<float>(W[j] + (c.nesterov ? eta * D[j] : 0.0));
            }
        } else {  // easgd: every difference from the weights before any replica moves
            const double alpha = c.elastic_alpha > 0 ? c.elastic_alpha : 0.9 / k;
            auto& C = center[name];
            for (std::size_t j = 0; j < n; ++j) {
                double sum = 0;
                for (auto& r : replicas) {
                    const double d = double(r.values[name][j]) - C[j];
                    sum += d;
                    r.values[name][j] = static_cast<float>(r.values[name][j] - alpha * d);
                }
                C[j] = static_cast<float>(C[j] + alpha * sum);
            }
        }
    }
}

void expect_values_close(const std::vector<float>& want, const std::vector<float>& got,
                         const std::string& what) {
    ASSERT_EQ(want.size(), got.size()) << what;
    double diff = 0, norm = 0;
    for (std::size_t j = 0; j < want.size(); ++j) {
        diff = std::max(diff, std::abs(double(want[j]) - double(got[j])));
        norm = std::max(norm, std::abs(double(want[j])));
    }
    EXPECT_LE(diff, 2e-5 * std::max(norm, 1e-2))
        << what << " differs by " << diff << " (max |value| " << norm << ")";
}

void follows_definition(const AveragingCase& c, int groups) {
    const int every = 2, steps = 7;  // averages after steps 2, 4, 6; step 7 ends between two
    TempDir dir;
    const std::string path = (dir.path() / "ck.safetensors").string();
    std::vector<std::shared_ptr<Device>> devices;
    for (int g = 0; g < groups; ++g) devices.push_back(cpu_device(g));
    Engine engine(averaging_options(c, groups, every, devices));

    // The replicas one after another, on one device.
    auto one = cpu_device(groups);
    std::vector<std::unique_ptr<Engine>> alone;
    for (int g = 0; g < groups; ++g)
        alone.push_back(std::make_unique<Engine>(averaging_options(c, 1, every, {one})));
    std::set<std::string> trained;
    for (auto& np : named_parameters(alone[0]->net())) trained.insert(np.name);
    Values global, move, center;
    {
        const Snapshot start = snapshot(*alone[0], path);
        for (const auto& name : trained) {
            const auto& w = start.values.at("model." + name);
            global["model." + name] = center["model." + name] = w;
            move["model." + name].assign(w.size(), 0.f);
        }
    }
    for (int step = 0; step < steps; ++step) {
        const Batch b = make_batch(step, kShard * groups);
        engine.step(b.images, b.labels);
        for (int g = 0; g < groups; ++g)
            alone[static_cast<std::size_t>(g)]->step(b.images.narrow_batch(kShard * g, kShard),
                                                     b.labels.narrow_batch(kShard * g, kShard));
        if ((step + 1) % every) continue;
        std::vector<Snapshot> replicas;
        for (auto& a : alone) replicas.push_back(snapshot(*a, path));
        average_by_definition(c, replicas, trained, global, move, center);
        for (int g = 0; g < groups; ++g)
            restore(*alone[static_cast<std::size_t>(g)], replicas[static_cast<std::size_t>(g)],
                    path);
    }

    const Snapshot got = snapshot(engine, path);
    for (int g = 0; g < groups; ++g) {
        const Snapshot want = snapshot(*alone[static_cast<std::size_t>(g)], path);
        const std::string prefix = g == 0 ? "" : "replica." + std::to_string(g) + ".";
        for (const auto& [name, v] : want.values) {
            const std::string what = c.name() + ", " + std::to_string(groups) + " groups: group " +
                                     std::to_string(g + 1) + "'s " + name;
            ASSERT_TRUE(got.values.count(prefix + name))
                << what << " is not in the engine's checkpoint";
            expect_values_close(v, got.values.at(prefix + name), what);
        }
    }
    for (const auto& name : trained) {
        const std::string what = c.name() + ", " + std::to_string(groups) + " groups: ";
        if (c.algorithm == AveragingAlgorithm::bmuf) {
            expect_values_close(global.at("model." + name), got.values.at("average.global." + name),
                                what + "global " + name);
            expect_values_close(move.at("model." + name),
                                got.values.at("average.block_momentum." + name),
                                what + "block momentum " + name);
        }
        if (c.algorithm == AveragingAlgorithm::easgd)
            expect_values_close(center.at("model." + name), got.values.at("average.center." + name),
                                what + "centre " + name);
    }
}

const std::vector<AveragingCase>& cases() {
    static const std::vector<AveragingCase> all = [] {
        std::vector<AveragingCase> v;
        v.push_back({AveragingAlgorithm::plain});
        AveragingCase bmuf{AveragingAlgorithm::bmuf};
        v.push_back(bmuf);
        bmuf.nesterov = false, bmuf.block_momentum = 0.5, bmuf.block_lr = 0.8;
        v.push_back(bmuf);
        AveragingCase easgd{AveragingAlgorithm::easgd};
        v.push_back(easgd);
        easgd.elastic_alpha = 0.2;
        v.push_back(easgd);
        v.push_back({AveragingAlgorithm::momentum});
        AveragingCase adam{AveragingAlgorithm::momentum};
        adam.adam = true;
        v.push_back(adam);
        return v;
    }();
    return all;
}

TEST(Averaging, TwoGroupsFollowTheDefinitions) {
    for (const AveragingCase& c : cases()) follows_definition(c, 2);
}

TEST(Averaging, FourGroupsFollowTheDefinitions) {
    for (const AveragingCase& c : cases()) follows_definition(c, 4);
}

// A checkpoint taken between two averages resumes exactly: every group's weights and state,
// the global model, block momentum or centre.
TEST(Averaging, ResumeBetweenAveragesContinuesBitForBit) {
    TempDir dir;
    const std::string path = (dir.path() / "mid.safetensors").string(),
                      out = (dir.path() / "out.safetensors").string();
    const int every = 2, groups = 2;
    for (const AveragingCase& c : cases()) {
        auto run = [&](int from, int to, Engine& e) {
            for (int s = from; s < to; ++s) {
                const Batch b = make_batch(s, kShard * groups);
                e.step(b.images, b.labels);
            }
        };
        Engine straight(averaging_options(c, groups, every, {cpu_device(0), cpu_device(1)}));
        run(0, 7, straight);
        {
            Engine first(averaging_options(c, groups, every, {cpu_device(2), cpu_device(3)}));
            run(0, 3, first);  // averaged after step 2; step 3 is its own
            first.save(path);
        }
        Engine resumed(averaging_options(c, groups, every, {cpu_device(4), cpu_device(5)}));
        resumed.load(path);
        run(3, 7, resumed);
        const Snapshot a = snapshot(straight, out), b = snapshot(resumed, out);
        ASSERT_EQ(a.values.size(), b.values.size()) << c.name();
        for (const auto& [name, v] : a.values)
            EXPECT_EQ(v, b.values.at(name)) << c.name() << ": " << name;
        if (c.algorithm == AveragingAlgorithm::bmuf) {
            EXPECT_TRUE(a.values.count("average.global.fc1.weight")) << c.name();
        }
        if (c.algorithm == AveragingAlgorithm::easgd) {
            EXPECT_TRUE(a.values.count("average.center.fc1.weight")) << c.name();
        }
        EXPECT_TRUE(a.values.count("replica.1.model.fc1.weight")) << c.name();
    }
}

// Without the other groups' entries (a checkpoint of synchronous SGD) every group takes group
// 0's weights, and BMUF's global model starts again from them.
TEST(Averaging, ACheckpointWithoutReplicasLoadsIntoEveryGroup) {
    TempDir dir;
    const std::string path = (dir.path() / "sgd.safetensors").string(),
                      out = (dir.path() / "out.safetensors").string();
    AveragingCase plain;
    Engine sgd(averaging_options(plain, 1, 2, {cpu_device(0)}));
    const Batch b = make_batch(0, kShard * 2);
    sgd.step(b.images, b.labels);
    sgd.save(path);
    AveragingCase bmuf{AveragingAlgorithm::bmuf};
    // Every 3 steps: neither step here (the first, and the file's step 1 + 1) averages.
    Engine engine(averaging_options(bmuf, 2, 3, {cpu_device(1), cpu_device(2)}));
    engine.step(b.images, b.labels);  // starts the global model from the first weights
    engine.load(path);
    const Snapshot s = snapshot(engine, out);
    EXPECT_EQ(s.values.at("model.fc1.weight"), s.values.at("replica.1.model.fc1.weight"));
    EXPECT_FALSE(s.values.count("average.global.fc1.weight"))
        << "the global model starts again at the next step";
    engine.step(b.images, b.labels);
    const Snapshot next = snapshot(engine, out);
    EXPECT_EQ(next.values.at("average.global.fc1.weight"), s.values.at("model.fc1.weight"));
}

TEST(Averaging, BadOptionsAreRefusedByName) {
    auto refuses = [](const std::function<void(ParallelOptions&)>& set, const std::string& says) {
        EngineOptions o = averaging_options(AveragingCase{}, 2, 2, {cpu_device(0), cpu_device(1)});
        try {
            set(o.parallel);
            Engine e(o);
            ADD_FAILURE() << "accepted; expected: " << says;
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    };
    refuses([](ParallelOptions& p) { p.average_every = 0, p.averaging = AveragingAlgorithm::bmuf; },
            "parallel.averaging = 'bmuf' needs parallel.average_every > 0");
    refuses(
        [](ParallelOptions& p) { p.averaging = AveragingAlgorithm::easgd, p.block_momentum = 0.5; },
        "parallel.block_momentum is an option of averaging = 'bmuf', not of averaging = 'easgd'");
    refuses(
        [](ParallelOptions& p) { p.block_nesterov = false; },
        "parallel.block_nesterov is an option of averaging = 'bmuf', not of averaging = 'plain'");
    refuses(
        [](ParallelOptions& p) { p.averaging = AveragingAlgorithm::bmuf, p.elastic_alpha = 0.1; },
        "parallel.elastic_alpha is an option of averaging = 'easgd'");
    refuses(
        [](ParallelOptions& p) { p.averaging = AveragingAlgorithm::easgd, p.elastic_alpha = 0.75; },
        "parallel.elastic_alpha = 0.75 with 2 replicas moves the centre past the replicas' mean");
    auto schema_refuses = [](std::string_view name, OptionValue value, const std::string& says) {
        ParallelOptions p;
        try {
            find_parallel_option(name)->set(p, value);
            ADD_FAILURE() << name << " took a bad value";
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    };
    schema_refuses(
        "averaging", std::string("elastic"),
        "parallel.averaging: unknown algorithm 'elastic' (known: plain, bmuf, easgd, momentum)");
    schema_refuses("block_momentum", 1.0, "parallel.block_momentum must be in [0, 1)");
    schema_refuses("block_lr", 0.0, "parallel.block_lr must be above 0");
    schema_refuses("elastic_alpha", -0.5, "parallel.elastic_alpha must be in [0, 1]");
    schema_refuses("elastic_alpha", std::string("x"), "parallel.elastic_alpha must be a number");
}

}  // namespace
}  // namespace tandem::test

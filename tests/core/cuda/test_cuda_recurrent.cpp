// The recurrent layers' whole-sequence path on a GPU (cuDNN's RNN API, issue 18) against the
// CPU's cell path on fixed inputs: output, input gradient, initial-state gradients and every
// weight's and bias's gradient, for LSTM and GRU, 1 and 2 layers, the whole sequence and the
// last state; micro-batches whose forwards run before their backwards (the reserve space kept
// per micro-batch); inference; and deterministic mode, which keeps the cell path. On a device of
// the test's own (not in deterministic mode, which an engine test may leave on the shared
// one). Skipped, saying why, without a GPU.
#include <map>
#include <tuple>

#include "layers/recurrent.h"
#include "support/cuda_parity.h"
#include "support/recurrent_options.h"

namespace tandem::test {
namespace {

std::shared_ptr<Recurrent> rnn(RnnCellKind cell, std::int64_t layers, bool bias, bool last_only) {
    auto layer =
        std::make_shared<Recurrent>(recurrent_options(cell, 6, 8, layers, bias, last_only));
    layer->initialize(3);
    return layer;
}

const char* cell_name(RnnCellKind cell) {
    return cell == RnnCellKind::lstm ? "LSTM" : "GRU";
}

// The layer on the CPU and a copy on `gpu` from the same inputs and output gradient; the copy
// must run the cuDNN path (`sequences`) or the cell path.
void expect_like_cpu(const std::shared_ptr<Recurrent>& layer, Device& gpu,
                     const std::vector<Tensor>& xs, std::uint64_t seed, bool sequences = true) {
    SCOPED_TRACE(layer->label() + " " + layer->options_text() + ", " + std::to_string(xs.size()) +
                 " inputs");
    auto copy = std::dynamic_pointer_cast<Recurrent>(layer->clone());
    ASSERT_EQ(copy->runs_sequences(gpu), sequences)
        << "which path the GPU runs (true: the whole-sequence kernel)";
    ASSERT_FALSE(layer->runs_sequences(cpu())) << "the CPU must keep the cell path";
    std::vector<Shape> shapes;
    for (const Tensor& x : xs) shapes.push_back(x.shape());
    const Tensor dy = random_tensor(layer->merged_shape(shapes), cpu(), seed);
    const LayerResults want = run_layer_on(*layer, cpu(), xs, dy);
    const LayerResults got = run_layer_on(*copy, gpu, xs, dy);
    test::expect_near(got.y, want.y, 1e-4, "output");
    ASSERT_EQ(got.dxs.size(), want.dxs.size());
    test::expect_near(got.dxs[0], want.dxs[0], 1e-4, "input gradient");
    for (std::size_t i = 1; i < want.dxs.size(); ++i)
        test::expect_near(got.dxs[i], want.dxs[i], 1e-4,
                          i == 1 ? "gradient of h0" : "gradient of c0");
    ASSERT_EQ(got.grads.size(), want.grads.size());
    for (const auto& [name, grad] : want.grads)
        test::expect_near(got.grads.at(name), grad, 1e-4, "gradient of " + name);
}

TEST(CudaRecurrent, CudnnPathMatchesTheCpuCells) {
    TANDEM_REQUIRE_GPUS(1);
    const std::shared_ptr<Device> gpu = own_cuda_device();
    const Tensor x = random_tensor({3, 5, 6}, cpu(), 1);
    std::uint64_t seed = 10;
    for (RnnCellKind cell : {RnnCellKind::lstm, RnnCellKind::gru})
        for (std::int64_t layers : {1, 2})
            for (bool last_only : {false, true}) {
                SCOPED_TRACE(std::string(cell_name(cell)) + ", " + std::to_string(layers) +
                             " layers" + (last_only ? ", last state" : ", sequence"));
                const auto layer = rnn(cell, layers, true, last_only);
                // Without initial states (zeros), then with every one the cell takes.
                expect_like_cpu(layer, *gpu, {x}, ++seed);
                std::vector<Tensor> xs{x, random_tensor({3, layers, 8}, cpu(), ++seed)};
                if (cell == RnnCellKind::lstm)
                    xs.push_back(random_tensor({3, layers, 8}, cpu(), ++seed));
                expect_like_cpu(layer, *gpu, xs, ++seed);
            }
    // No bias (cuDNN's CUDNN_RNN_NO_BIAS); a one-layer state given as N x hidden; the LSTM
    // with h0 alone.
    expect_like_cpu(rnn(RnnCellKind::gru, 2, false, false), *gpu, {x}, 41);
    expect_like_cpu(rnn(RnnCellKind::lstm, 1, false, true), *gpu,
                    {x, random_tensor({3, 8}, cpu(), 42), random_tensor({3, 8}, cpu(), 43)}, 44);
    expect_like_cpu(rnn(RnnCellKind::lstm, 2, true, false), *gpu,
                    {x, random_tensor({3, 2, 8}, cpu(), 45)}, 46);
    // Wide and long enough that cuDNN tiles its products and errors would add up.
    auto wide =
        std::make_shared<Recurrent>(recurrent_options(RnnCellKind::lstm, 32, 256, 2, true, true));
    wide->initialize(5);
    expect_like_cpu(wide, *gpu, {random_tensor({16, 12, 32}, cpu(), 47)}, 48);
}

// Two micro-batches, each with its own tape, both forwards before either backward (as a
// pipeline runs them): each backward meets its own reserve space and packed weights, and the
// weight gradients add up to the CPU's over the two.
TEST(CudaRecurrent, MicroBatchesKeepTheirOwnReserveSpace) {
    TANDEM_REQUIRE_GPUS(1);
    const std::shared_ptr<Device> gpu = own_cuda_device();
    for (RnnCellKind cell : {RnnCellKind::lstm, RnnCellKind::gru}) {
        SCOPED_TRACE(cell_name(cell));
        auto run = [&](Recurrent& layer, Device& device) {
            for (Parameter* p : layer.parameters())
                p->grad = Tensor::zeros(p->value.shape(), host_device());
            layer.to(device);
            const std::vector<Tensor> xs{random_tensor({2, 4, 6}, cpu(), 51).to(device),
                                         random_tensor({3, 4, 6}, cpu(), 52).to(device)};
            const std::vector<Tensor> dys{random_tensor({2, 4, 8}, cpu(), 53).to(device),
                                          random_tensor({3, 4, 8}, cpu(), 54).to(device)};
            Tape tapes[2];
            std::vector<Tensor> ys, dxs(2);
            for (int m = 0; m < 2; ++m) {
                Pass pass{device, Mode::train, m, tapes[m], 0};
                ys.push_back(layer.merge({xs[m]}, pass).to(host_device()));
            }
            for (int m = 2; m-- > 0;) {
                Pass pass{device, Mode::train, m, tapes[m], 0};
                dxs[m] = layer.unmerge({xs[m]}, dys[m], pass)[0].to(host_device());
                EXPECT_TRUE(tapes[m].empty());
            }
            std::map<std::string, Tensor> grads;
            for (Parameter* p : layer.parameters()) grads[p->name] = p->grad.to(host_device());
            return std::make_tuple(ys, dxs, grads);
        };
        auto layer = rnn(cell, 2, true, false);
        auto copy = std::dynamic_pointer_cast<Recurrent>(layer->clone());
        const auto [want_y, want_dx, want_grads] = run(*layer, cpu());
        const auto [got_y, got_dx, got_grads] = run(*copy, *gpu);
        for (int m = 0; m < 2; ++m) {
            test::expect_near(got_y[m], want_y[m], 1e-4,
                              "output of micro-batch " + std::to_string(m));
            test::expect_near(got_dx[m], want_dx[m], 1e-4,
                              "input gradient of micro-batch " + std::to_string(m));
        }
        for (const auto& [name, grad] : want_grads)
            test::expect_near(got_grads.at(name), grad, 1e-4, "gradient of " + name);
    }
}

// An inference forward (no reserve space) gives what a training forward gives; deterministic
// mode runs the cell path, which still matches.
TEST(CudaRecurrent, InferenceAndDeterministicMode) {
    TANDEM_REQUIRE_GPUS(1);
    const std::shared_ptr<Device> gpu = own_cuda_device();
    for (RnnCellKind cell : {RnnCellKind::lstm, RnnCellKind::gru}) {
        SCOPED_TRACE(cell_name(cell));
        auto layer = rnn(cell, 2, true, true);
        layer->to(*gpu);
        const Tensor x = random_tensor({3, 5, 6}, cpu(), 61).to(*gpu);
        Tape train_tape, eval_tape;
        Pass train{*gpu, Mode::train, 0, train_tape, 0}, eval{*gpu, Mode::eval, 0, eval_tape, 0};
        const Tensor trained = layer->merge({x}, train).to(host_device());
        test::expect_near(layer->merge({x}, eval).to(host_device()), trained, 1e-5,
                          "inference output");
        EXPECT_TRUE(eval_tape.empty());
        train_tape.clear();

        const std::shared_ptr<Device> deterministic = own_cuda_device();
        deterministic->set_deterministic(true);
        expect_like_cpu(rnn(cell, 2, true, true), *deterministic, {x.to(host_device())}, 62, false);
    }
}

}  // namespace
}  // namespace tandem::test

#include <gtest/gtest.h>

#include "kernels/registry.h"
#include "layers/graph.h"
#include "layers/recurrent.h"
#include "support/grad_check.h"
#include "support/recurrent_options.h"
#include "support/torch_fixture.h"

namespace tandem::test {
namespace {

struct RecurrentCase {
    const char* fixture;
    RecurrentOptions options;
};

const RecurrentCase kCases[] = {
    {"recurrent_lstm_2layer_sequence", recurrent_options(RnnCellKind::lstm, 5, 4, 2, true, false)},
    {"recurrent_lstm_last", recurrent_options(RnnCellKind::lstm, 3, 6, 1, true, true)},
    {"recurrent_gru_2layer_sequence", recurrent_options(RnnCellKind::gru, 5, 4, 2, true, false)},
    {"recurrent_gru_last_nobias", recurrent_options(RnnCellKind::gru, 3, 6, 1, false, true)},
};

TEST(Recurrent, ForwardAndBackwardMatchPyTorch) {
    for (const RecurrentCase& c : kCases) {
        SCOPED_TRACE(c.fixture);
        const TorchFixture f(c.fixture);
        Recurrent rnn(c.options);
        for (Parameter* p : rnn.parameters()) {
            p->value.copy_from(f[p->name]);
            p->grad.fill(0);
        }
        std::vector<Tensor> xs{f["x"]};
        if (f.has("h0")) xs.push_back(f["h0"]);
        if (f.has("c0")) xs.push_back(f["c0"]);
        Tape tape;
        Pass pass{test_device(), Mode::train, 0, tape, 0};
        expect_close(rnn.merge(xs, pass), f["y"], "y", 1e-4f, 1e-5f);
        const auto dxs = rnn.unmerge(xs, f["dy"], pass);
        expect_close(dxs[0], f["dx"], "dx", 1e-4f, 1e-5f);
        if (f.has("h0")) expect_close(dxs[1], f["dh0"], "dh0", 1e-4f, 1e-5f);
        if (f.has("c0")) expect_close(dxs[2], f["dc0"], "dc0", 1e-4f, 1e-5f);
        for (Parameter* p : rnn.parameters())
            expect_close(p->grad, f["grad." + p->name], "grad." + p->name, 1e-4f, 1e-5f);
        EXPECT_TRUE(tape.empty());
    }
}

TEST(Recurrent, GradientsMatchFiniteDifferences) {
    for (RnnCellKind cell : {RnnCellKind::lstm, RnnCellKind::gru})
        for (bool last : {false, true}) {
            SCOPED_TRACE(std::string(cell == RnnCellKind::lstm ? "LSTM" : "GRU") +
                         (last ? " last" : " sequence"));
            Recurrent rnn(recurrent_options(cell, 3, 4, 2, true, last));
            rnn.initialize(5);
            GradCheckOptions o;
            o.max_elements = 40;
            check_gradients(rnn, random_tensor({2, 5, 3}, test_device(), 7), test_device(), o);
        }
}

TEST(Recurrent, InitialStatesComeAsGraphInputs) {
    auto g = std::make_shared<Graph>();
    for (const char* name : {"x", "h0", "c0"}) g->add_input(name);
    auto lstm =
        std::make_shared<Recurrent>(recurrent_options(RnnCellKind::lstm, 3, 4, 1, true, true));
    lstm->set_name("lstm");
    g->set_outputs({g->add(lstm, {"x", "h0", "c0"})});
    const Tensor x = random_tensor({2, 5, 3}, test_device(), 1),
                 h0 = random_tensor({2, 4}, test_device(), 2),
                 c0 = random_tensor({2, 1, 4}, test_device(), 3);
    Tape tape;
    Pass pass{test_device(), Mode::eval, 0, tape, 0};
    const auto ys = g->forward_graph({x, h0, c0}, pass);
    EXPECT_EQ(ys[0].to_vector(), lstm->merge({x, h0, c0}, pass).to_vector());
    // Zero initial states are what no initial state means.
    const Tensor zero = Tensor::zeros({2, 4}, test_device());
    EXPECT_EQ(lstm->merge({x, zero, zero}, pass).to_vector(), lstm->forward(x, pass).to_vector());
}

TEST(Recurrent, NamesShapesAndMistakes) {
    Recurrent lstm(recurrent_options(RnnCellKind::lstm, 3, 4, 2, true, false));
    lstm.set_name("lstm1");
    std::vector<std::string> names;
    for (Parameter* p : lstm.parameters()) names.push_back(p->name);
    EXPECT_EQ(names, (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0",
                                               "bias_hh_l0", "weight_ih_l1", "weight_hh_l1",
                                               "bias_ih_l1", "bias_hh_l1"}));
    EXPECT_EQ(lstm.kind(), "LSTM");
    EXPECT_EQ(lstm.options_text(), "3->4, 2 layers, sequence");
    EXPECT_EQ(lstm.output_shape({8, 28, 3}), (Shape{8, 28, 4}));
    EXPECT_EQ(lstm.parameters()[0]->value.shape(), (Shape{16, 3}));
    EXPECT_GT(lstm.forward_flops({8, 28, 3}), 0);
    EXPECT_GT(lstm.memory_estimate({8, 28, 3}).saved_bytes, 0u);
    try {
        lstm.output_shape({8, 3});
        FAIL() << "expected a ShapeError";
    } catch (const ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("N x steps x 3 (batch first), got 8x3"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(lstm.merged_shape({{8, 5, 3}, {8, 4}}), ShapeError);  // 2 layers need N x 2 x 4
    EXPECT_THROW(Recurrent(recurrent_options(RnnCellKind::gru, 0, 4, 1, true, false)), ConfigError);
    Recurrent gru(recurrent_options(RnnCellKind::gru, 3, 4, 1, false, true));
    EXPECT_EQ(gru.kind(), "GRU");
    EXPECT_EQ(gru.parameters().size(), 2u);
    EXPECT_EQ(gru.max_inputs(), 2u);
}

// The CPU offers no whole-sequence kernel (only CUDA does, on cuDNN): its LSTM and GRU always
// step through time with the cell, the path the PyTorch comparisons above check.
TEST(Recurrent, TheCpuStepsThroughTimeWithTheCell) {
    Recurrent lstm(recurrent_options(RnnCellKind::lstm, 3, 4, 2, true, false));
    EXPECT_FALSE(KernelRegistry::instance().offers<RnnSequenceKernel>(test_device()));
    EXPECT_FALSE(lstm.runs_sequences(test_device()));
    EXPECT_TRUE(KernelRegistry::instance().offers<RnnCellKernel>(test_device()));
}

}  // namespace
}  // namespace tandem::test

// Recurrent: the LSTM and GRU layers, PyTorch's definitions (torch.nn.LSTM / GRU with
// batch_first), several layers stacked, one direction.
//
// Input N x T x features; output N x T x hidden (the whole sequence) or N x hidden (the last
// step's state, `last_only`). Optional initial states come as more inputs, in a Graph: the GRU's
// h0, the LSTM's h0 and c0, each N x layers x hidden (batch first, unlike PyTorch's
// layers x N x hidden, because micro-batches cut every input along its first dimension); zero
// when absent. Parameters per layer k as PyTorch names them: weight_ih_l<k> (G*hidden x in),
// weight_hh_l<k> (G*hidden x hidden), bias_ih_l<k>, bias_hh_l<k>, gates in PyTorch's order
// (LSTM i, f, g, o; GRU r, z, n), initialised uniform in +-1/sqrt(hidden) as PyTorch does.
//
// How it runs: each layer projects the whole sequence at once (one product of T*N rows), then
// steps through time with one N-row product for the hidden state and the cell kernel
// (RnnCellKernel); backward runs the steps in reverse and the input projection's products once.
// Sequences are kept time-major inside (step t is rows [t N, (t + 1) N)). That is the CPU's
// path, always. A device kind that offers an RnnSequenceKernel (CUDA: cuDNN's RNN API) runs
// the whole stack over whole sequences in one call instead (recurrent_sequence.cpp), except in
// deterministic mode, where the cell path's fixed order of sums is kept.
#pragma once

#include "kernels/kernel_cache.h"
#include "layers/merge.h"

namespace tandem {

struct RecurrentOptions {
    RnnCellKind cell = RnnCellKind::lstm;
    std::int64_t input_size = 0, hidden_size = 0;
    std::int64_t layers = 1;
    bool bias = true;
    bool last_only = false;  // the last step's hidden state instead of the whole sequence
};

class Recurrent final : public Merge {
public:
    // Throws ConfigError naming an option out of range.
    explicit Recurrent(const RecurrentOptions& options);
    const RecurrentOptions& options() const { return options_; }

    std::string_view kind() const override {
        return options_.cell == RnnCellKind::lstm ? "LSTM" : "GRU";
    }
    LayerPtr clone() const override { return finish_clone(std::make_shared<Recurrent>(options_)); }
    std::string options_text() const override;
    std::size_t min_inputs() const override { return 1; }
    std::size_t max_inputs() const override { return options_.cell == RnnCellKind::lstm ? 3 : 2; }

    Shape merged_shape(const std::vector<Shape>& inputs) const override;
    MemoryEstimate merged_memory(const std::vector<Shape>& inputs) const override;
    double merged_flops(const std::vector<Shape>& inputs) const override;
    Tensor merge(const std::vector<Tensor>& xs, Pass& pass) override;
    std::vector<Tensor> unmerge(const std::vector<Tensor>& xs, const Tensor& dy,
                                Pass& pass) override;

    std::vector<Parameter*> parameters() override;
    void initialize(std::uint64_t seed) override;

    // Whether a forward on `device` now runs the whole-sequence kernel (else the cell path).
    bool runs_sequences(const Device& device) const;

private:
    struct Weights {
        Parameter w_ih, w_hh, b_ih, b_hh;
    };
    std::int64_t gates() const { return RnnCellKernel::gates(options_.cell); }
    std::int64_t layer_input(std::int64_t k) const {
        return k == 0 ? options_.input_size : options_.hidden_size;
    }
    LinearKernel& projection(Device& device, std::int64_t rows, std::int64_t in);
    RnnCellKernel& cell(Device& device, std::int64_t n);
    RnnSequenceKernel& sequence(Device& device, std::int64_t n, std::int64_t steps);
    // The whole-sequence path (recurrent_sequence.cpp); its tape entry is kSequenceSlot's.
    static constexpr std::size_t kSequenceSlot = 1;
    Tensor merge_sequence(const std::vector<Tensor>& xs, Pass& pass);
    std::vector<Tensor> unmerge_sequence(const std::vector<Tensor>& xs, const Tensor& dy,
                                         Pass& pass);
    // Every layer's values (or gradients) as the sequence kernel takes them.
    std::vector<RnnLayerParams> layer_params(bool grads);
    // Layer k's initial state (h0 or c0 input `which`), N x hidden, zero when not given.
    Tensor initial_state(const std::vector<Tensor>& xs, std::size_t which, std::int64_t k,
                         Pass& pass) const;

    RecurrentOptions options_;
    std::vector<Weights> weights_;
    KernelCache<LinearKernel> projections_;
    KernelCache<RnnCellKernel> cells_;
    KernelCache<RnnSequenceKernel> sequences_;
};

}  // namespace tandem

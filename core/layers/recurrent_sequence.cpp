// The recurrent layer's whole-sequence path: one RnnSequenceKernel call for every layer and
// step (CUDA: cuDNN's RNN API, device/cuda/rnn_cudnn.cpp), where the device kind offers one.
//
// The kernel takes batch-first sequences as the layer's input and output already are, and
// layer-major initial states (layers x N x hidden, cuDNN's), so only the states are reordered
// here. A training forward keeps, per micro-batch in the pass's tape (slot kSequenceSlot), what
// backward needs: the input, the output sequence, the initial states, the packed weights and
// cuDNN's reserve space; several micro-batches' forwards may run before their backwards
// (pipelines), and each backward takes its own entry and erases it.
#include "kernels/registry.h"
#include "layers/recurrent.h"

namespace tandem {
namespace {

// Initial state `which` (h0 1, c0 2) as layers x N x hidden, undefined when not given (the
// kernel reads zeros). The layer's inputs are N x layers x hidden (or N x hidden).
Tensor layer_major_state(const std::vector<Tensor>& xs, std::size_t which, std::int64_t layers,
                         std::int64_t h, Device& device) {
    if (which >= xs.size()) return Tensor();
    const std::int64_t n = xs[0].shape()[0];
    Tensor out = Tensor::empty({layers, n, h}, device);
    for (std::int64_t k = 0; k < layers; ++k)
        tensor_ops(device).copy_rows(xs[which], out,
                                     RowCopy{n, h, k * h, layers * h, k * n * h, h});
    return out;
}

}  // namespace

bool Recurrent::runs_sequences(const Device& device) const {
    // Deterministic mode keeps the cell path: cuDNN does not promise that its RNN functions
    // (cuBLAS products inside, with workspaces of its own choosing) give the same bits run to
    // run, while every sum of the cell path has a fixed order.
    return !device.deterministic() &&
           KernelRegistry::instance().offers<RnnSequenceKernel>(device, kernel_impl());
}

RnnSequenceKernel& Recurrent::sequence(Device& device, std::int64_t n, std::int64_t steps) {
    const RecurrentOptions& o = options_;
    return sequences_.get(
        device, RnnSequenceConfig{o.cell, n, steps, o.input_size, o.hidden_size, o.layers, o.bias},
        kernel_impl());
}

std::vector<RnnLayerParams> Recurrent::layer_params(bool grads) {
    std::vector<RnnLayerParams> out;
    for (Weights& w : weights_)
        out.push_back(grads
                          ? RnnLayerParams{w.w_ih.grad, w.w_hh.grad, w.b_ih.grad, w.b_hh.grad}
                          : RnnLayerParams{w.w_ih.value, w.w_hh.value, w.b_ih.value, w.b_hh.value});
    return out;
}

Tensor Recurrent::merge_sequence(const std::vector<Tensor>& xs, Pass& pass) {
    Device& device = pass.device;
    const bool lstm = options_.cell == RnnCellKind::lstm, train = pass.mode == Mode::train;
    const std::int64_t n = xs[0].shape()[0], steps = xs[0].shape()[1], h = options_.hidden_size;
    const std::int64_t layers = options_.layers;
    RnnSequenceKernel& kernel = sequence(device, n, steps);
    const Tensor x = in_layout(xs[0], Layout::contiguous, device);
    const Tensor h0 = layer_major_state(xs, 1, layers, h, device);
    const Tensor c0 = lstm ? layer_major_state(xs, 2, layers, h, device) : Tensor();
    Tensor packed =
        Tensor::empty({static_cast<std::int64_t>(kernel.packed_bytes())}, device, DType::u8);
    Tensor reserve = train ? Tensor::empty({static_cast<std::int64_t>(kernel.reserve_bytes())},
                                           device, DType::u8)
                           : Tensor();
    Tensor y = Tensor::empty({n, steps, h}, device);
    kernel.forward(x, layer_params(false), h0, c0, packed, y, reserve);
    if (train) pass.saved.put(this, {x, y, h0, c0, packed, reserve}, kSequenceSlot);
    if (!options_.last_only) return y;
    Tensor last = Tensor::empty({n, h}, device);
    tensor_ops(device).copy_rows(y, last, RowCopy{n, h, (steps - 1) * h, steps * h, 0, h});
    return last;
}

std::vector<Tensor> Recurrent::unmerge_sequence(const std::vector<Tensor>& xs, const Tensor& dy,
                                                Pass& pass) {
    const std::vector<Tensor>& saved = pass.saved.get(this, kSequenceSlot);
    TANDEM_CHECK(saved.size() == 6) << label() << ": backward after another forward";
    Device& device = pass.device;
    TensorOpsKernel& ops = tensor_ops(device);
    const bool lstm = options_.cell == RnnCellKind::lstm;
    const std::int64_t n = xs[0].shape()[0], steps = xs[0].shape()[1], h = options_.hidden_size;
    const std::int64_t layers = options_.layers;
    RnnSequenceKernel& kernel = sequence(device, n, steps);
    // The gradient of the top layer's output at every step: the last step's only, when the
    // layer gives the last state.
    Tensor dys;
    if (options_.last_only) {
        dys = Tensor::empty({n, steps, h}, device);
        ops.fill(dys, 0);
        ops.copy_rows(dy, dys, RowCopy{n, h, 0, h, (steps - 1) * h, steps * h});
    } else {
        dys = in_layout(dy, Layout::contiguous, device);
    }
    Tensor dx = Tensor::empty({n, steps, options_.input_size}, device);
    Tensor dh0 = xs.size() > 1 ? Tensor::empty({layers, n, h}, device) : Tensor();
    Tensor dc0 = lstm && xs.size() > 2 ? Tensor::empty({layers, n, h}, device) : Tensor();
    Tensor reserve = saved[5];
    kernel.backward(saved[0], saved[1], dys, saved[2], saved[3], saved[4], reserve, dx, dh0, dc0,
                    layer_params(true));
    pass.saved.erase(this, kSequenceSlot);

    std::vector<Tensor> dxs{pass.need_dx ? dx : Tensor()};
    // The initial states' gradients, back in their N x layers x hidden (or N x hidden) shape.
    for (std::size_t i = 1; i < xs.size(); ++i) {
        Tensor d = Tensor::empty(xs[i].shape(), device);
        const Tensor& per_layer = i == 1 ? dh0 : dc0;
        for (std::int64_t k = 0; k < layers; ++k)
            ops.copy_rows(per_layer, d, RowCopy{n, h, k * n * h, h, k * h, layers * h});
        dxs.push_back(std::move(d));
    }
    return dxs;
}

}  // namespace tandem

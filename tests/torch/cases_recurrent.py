"""LSTM and GRU (issue 18) on fixed inputs, for tests/core/layers/test_recurrent.cpp.

Each fixture holds the layer's parameters as PyTorch names them (weight_ih_l0, ...), x
(N x T x F, batch first), the initial states given batch first (h0, c0: N x layers x hidden;
PyTorch takes layers x N x hidden), dy for the output, and what PyTorch computes: y, dx, dh0,
dc0 and every parameter's gradient (grad.<name>).
"""
import torch

CASES = {
    # name: (cell, input, hidden, layers, bias, last step only, with initial states)
    "lstm_2layer_sequence": ("lstm", 5, 4, 2, True, False, True),
    "lstm_last": ("lstm", 3, 6, 1, True, True, False),
    "gru_2layer_sequence": ("gru", 5, 4, 2, True, False, True),
    "gru_last_nobias": ("gru", 3, 6, 1, False, True, False),
}


def cases():
    out = {}
    n, steps = 3, 7
    for name, (cell, features, hidden, layers, bias, last, states) in CASES.items():
        make = torch.nn.LSTM if cell == "lstm" else torch.nn.GRU
        rnn = make(features, hidden, num_layers=layers, bias=bias, batch_first=True)
        x = (torch.rand(n, steps, features) * 2 - 1).requires_grad_(True)
        tensors = {"x": x}
        args = []
        if states:
            h0 = (torch.rand(n, layers, hidden) * 2 - 1).requires_grad_(True)
            tensors["h0"] = h0
            first = h0.transpose(0, 1)
            if cell == "lstm":
                c0 = (torch.rand(n, layers, hidden) * 2 - 1).requires_grad_(True)
                tensors["c0"] = c0
                args = [(first, c0.transpose(0, 1))]
            else:
                args = [first]
        seq, _ = rnn(x, *args)
        y = seq[:, -1, :] if last else seq
        dy = torch.rand(*y.shape) * 2 - 1
        y.backward(dy)
        result = {name_: t.detach() for name_, t in tensors.items()}
        result.update({"dy": dy, "y": y.detach(), "dx": x.grad})
        if states:
            result["dh0"] = tensors["h0"].grad
            if cell == "lstm":
                result["dc0"] = tensors["c0"].grad
        for pname, p in rnn.named_parameters():
            result[pname] = p.detach()
            result["grad." + pname] = p.grad
        out["recurrent_" + name] = result
    return out

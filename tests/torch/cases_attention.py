"""Scaled dot-product and additive attention (issue 18) on fixed inputs, for
tests/core/layers/test_attention.cpp.

Each fixture holds the inputs (q, k and, with three inputs, v; without v the keys are the
values too), dy for the output, and what PyTorch computes: y, the attention weights, dq, dk,
dv and, for the additive layer, its parameters and their gradients (grad.<name>).

Debian's PyTorch (1.13) predates torch.nn.functional.scaled_dot_product_attention (2.0): the
scaled case is written with its documented definition, softmax(q k^T * scale + mask) v with the
causal mask ones(L, S).tril(). Inputs are drawn from a generator of their own, so the other
modules' fixtures do not depend on this one.
"""
import math

import torch


def uniform(gen, *shape):
    return (torch.rand(*shape, generator=gen) * 2 - 1).requires_grad_(True)


def scaled_dot_product(q, k, v, scale, causal):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale
    if causal:
        visible = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        scores = scores.masked_fill(~visible, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


class Additive(torch.nn.Module):
    """Bahdanau: score = v . tanh(Wq q_i + Wk k_j + b), softmax over j, weighted sum of values."""

    def __init__(self, query_size, key_size, hidden, bias, gen):
        super().__init__()
        self.query_weight = torch.nn.Parameter(torch.rand(hidden, query_size, generator=gen) - 0.5)
        self.key_weight = torch.nn.Parameter(torch.rand(hidden, key_size, generator=gen) - 0.5)
        self.bias = torch.nn.Parameter(torch.rand(hidden, generator=gen) - 0.5) if bias else None
        self.score_weight = torch.nn.Parameter(torch.rand(hidden, generator=gen) * 2 - 1)

    def forward(self, q, k, v):
        pq = q @ self.query_weight.t()
        pk = k @ self.key_weight.t()
        if self.bias is not None:
            pk = pk + self.bias
        t = torch.tanh(pq.unsqueeze(2) + pk.unsqueeze(1))  # N x Tq x Tk x hidden
        weights = torch.softmax(t @ self.score_weight, dim=-1)
        return weights @ v, weights


# name: (N, Tq, Tk, d, dv or None (keys are values), scale, causal)
SCALED = {
    "qkv": (2, 3, 5, 4, 6, None, False),
    "causal": (2, 4, 4, 3, 2, 0.5, True),
    "causal_more_keys": (2, 3, 5, 3, 2, None, True),
    "kv": (2, 3, 4, 5, None, None, False),
}

# name: (N, Tq, Tk, query_size, key_size, hidden, dv or None, bias)
ADDITIVE = {
    "qkv": (2, 3, 4, 5, 3, 6, 2, True),
    "kv_nobias": (3, 2, 5, 4, 3, 5, None, False),
}


def finish(y, weights, dy, tensors, module=None):
    y.backward(dy)
    out = {name: t.detach() for name, t in tensors.items()}
    out.update({"dy": dy, "y": y.detach(), "weights": weights.detach()})
    out.update({"d" + name: t.grad for name, t in tensors.items()})
    if module is not None:
        for pname, p in module.named_parameters():
            out[pname] = p.detach()
            out["grad." + pname] = p.grad
    return out


def cases():
    gen = torch.Generator().manual_seed(18)
    out = {}
    for name, (n, tq, tk, d, dv, scale, causal) in SCALED.items():
        tensors = {"q": uniform(gen, n, tq, d), "k": uniform(gen, n, tk, d)}
        if dv is not None:
            tensors["v"] = uniform(gen, n, tk, dv)
        y, weights = scaled_dot_product(tensors["q"], tensors["k"], tensors.get("v", tensors["k"]), scale, causal)
        out["attention_sdpa_" + name] = finish(y, weights, torch.rand(*y.shape, generator=gen) * 2 - 1, tensors)
    for name, (n, tq, tk, dq, dk, hidden, dv, bias) in ADDITIVE.items():
        module = Additive(dq, dk, hidden, bias, gen)
        tensors = {"q": uniform(gen, n, tq, dq), "k": uniform(gen, n, tk, dk)}
        if dv is not None:
            tensors["v"] = uniform(gen, n, tk, dv)
        y, weights = module(tensors["q"], tensors["k"], tensors.get("v", tensors["k"]))
        out["attention_additive_" + name] = finish(y, weights, torch.rand(*y.shape, generator=gen) * 2 - 1, tensors,
                                                   module)
    return out

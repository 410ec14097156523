"""Optimizers and gradient clipping: three steps of torch.optim.Adam, AdamW and SGD on a
weight (decayed) and a bias (not decayed: its own parameter group with weight_decay 0, as
Tandem's decay = false), with fixed gradients and a learning rate that changes every step (as
a schedule gives it); and torch.nn.utils.clip_grad_norm_ over two gradients."""
import torch

STEPS = 3
LRS = [0.01, 0.005, 0.0025]


def fixed(shape, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g) * 2 - 1) * scale


def run(name, make):
    w = torch.nn.Parameter(fixed((4, 3), 1))
    b = torch.nn.Parameter(fixed((3,), 2))
    out = {"w0": w.detach().clone(), "b0": b.detach().clone()}
    opt = make([{"params": [w]}, {"params": [b], "weight_decay": 0.0}])
    for t in range(1, STEPS + 1):
        w.grad = fixed((4, 3), 10 + t, 0.5)
        b.grad = fixed((3,), 20 + t, 0.5)
        # A zero gradient element: Adam's denominator is eps alone there.
        w.grad[0, 0] = 0.0
        out[f"grad_w.{t}"] = w.grad.clone()
        out[f"grad_b.{t}"] = b.grad.clone()
        for group in opt.param_groups:
            group["lr"] = LRS[t - 1]
        opt.step()
        out[f"w.{t}"] = w.detach().clone()
        out[f"b.{t}"] = b.detach().clone()
    state = opt.state[w]
    for key in ("exp_avg", "exp_avg_sq", "momentum_buffer"):
        if key in state:
            out[f"{key}.w"] = state[key].clone()
    return name, out


def clip_case():
    a, b = fixed((5, 2), 30, 2.0), fixed((7,), 31, 2.0)
    pa, pb = torch.nn.Parameter(torch.zeros(5, 2)), torch.nn.Parameter(torch.zeros(7))
    pa.grad, pb.grad = a.clone(), b.clone()
    norm = torch.nn.utils.clip_grad_norm_([pa, pb], max_norm=0.5)
    return "clip_grad_norm", {"grad_a": a, "grad_b": b, "clipped_a": pa.grad, "clipped_b": pb.grad,
                              "norm": norm.reshape(1)}


def cases():
    adam = lambda **kw: lambda groups: torch.optim.Adam(groups, lr=LRS[0], **kw)
    adamw = lambda **kw: lambda groups: torch.optim.AdamW(groups, lr=LRS[0], **kw)
    sgd = lambda **kw: lambda groups: torch.optim.SGD(groups, lr=LRS[0], **kw)
    return dict([
        run("adam", adam()),
        run("adam_decay", adam(weight_decay=0.1)),
        run("adam_betas", adam(betas=(0.8, 0.99), eps=1e-6)),
        run("adamw", adamw()),
        run("adamw_decay", adamw(weight_decay=0.2)),
        run("sgd_nesterov", sgd(momentum=0.9, weight_decay=0.05, nesterov=True)),
        clip_case(),
    ])

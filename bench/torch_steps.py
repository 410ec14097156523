"""A PyTorch training step set up and timed as the peers' bench_torch.py does, for
bench/torch_cuda.py and bench/torch_autocast.py."""
import time


def sgd_setup(model, x, channels_last):
    """The model and batch in the layout asked for, SGD with momentum and the cross-entropy:
    (model, x, optimizer, loss)."""
    import torch
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return model, x, opt, torch.nn.CrossEntropyLoss()


def time_steps(step, warmup, iters, budget_s, most):
    """`warmup` untimed steps, then `iters` individually timed ones (0: as many as fit in about
    `budget_s` seconds, 20 to `most`). Returns (iters, [seconds per step])."""
    for _ in range(warmup):
        step()
    t0 = time.perf_counter(); step(); t_one = time.perf_counter() - t0
    iters = iters or max(20, min(most, int(budget_s / max(t_one, 1e-5))))
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter(); step(); ts.append(time.perf_counter() - t0)
    return iters, ts

"""Times a PyTorch training step as the peers' bench_torch.py does, for bench/torch_cuda.py and
bench/torch_autocast.py: `warmup` untimed steps, then `iters` individually timed ones (0: as
many as fit in about `budget_s` seconds, 20 to `most`). Returns (iters, [seconds per step]).
"""
import time


def time_steps(step, warmup, iters, budget_s, most):
    for _ in range(warmup):
        step()
    t0 = time.perf_counter(); step(); t_one = time.perf_counter() - t0
    iters = iters or max(20, min(most, int(budget_s / max(t_one, 1e-5))))
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter(); step(); ts.append(time.perf_counter() - t0)
    return iters, ts

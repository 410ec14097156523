#!/usr/bin/python3
"""PyTorch's CPU training step in bf16 autocast: the peer of `tandem bench --precision=bf16`.

The reference nets of ../shared/peers (its nets.py), timed as its bench_torch.py times float32
(median img/s over individually timed steps of forward, loss, backward and SGD with momentum),
with forward and loss under torch.autocast('cpu', dtype=torch.bfloat16): convolutions and
Linear on bfloat16 operands, float32 weights, the recipe PyTorch documents for CPU mixed
precision. bf16 needs no loss scaling.

usage: OMP_NUM_THREADS=T PY bench/torch_autocast.py --net NET --batch B --threads T
           [--channels-last] [--iters N] [--warmup W] [--peers ../shared/peers]
Prints one JSON line (the fields bench_torch.py prints that bench/peers.py reads).
"""
import argparse, json, os, statistics, sys

import torch

from torch_steps import sgd_setup, time_steps

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument('--net', required=True)
ap.add_argument('--batch', type=int, required=True)
ap.add_argument('--threads', type=int, required=True)
ap.add_argument('--channels-last', action='store_true')
ap.add_argument('--iters', type=int, default=0, help='timed iterations (0 = auto, ~10 s)')
ap.add_argument('--warmup', type=int, default=5)
ap.add_argument('--peers', default=os.path.join(here, '..', '..', 'shared', 'peers'))
a = ap.parse_args()
sys.path.insert(0, a.peers)
from nets import NETS  # noqa: E402

torch.set_num_threads(a.threads)
torch.manual_seed(0)
ctor, shape = NETS[a.net]
model = ctor()
model.train()
x = torch.randn(a.batch, *shape)
y = torch.randint(0, 10, (a.batch,))
model, x, opt, crit = sgd_setup(model, x, a.channels_last)


def step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast('cpu', dtype=torch.bfloat16):
        loss = crit(model(x), y)
    loss.backward()
    opt.step()
    return loss


iters, ts = time_steps(step, a.warmup, a.iters, budget_s=10.0, most=1000)
med = statistics.median(ts)
print(json.dumps(dict(net=a.net, batch=a.batch, threads=a.threads, precision='bf16',
                      channels_last=a.channels_last, iters=iters, median_s=round(med, 5),
                      img_per_s_median=round(a.batch / med, 1),
                      img_per_s_mean=round(a.batch * iters / sum(ts), 1))), flush=True)

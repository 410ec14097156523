#!/usr/bin/python3
"""LSTM and GRU forward + backward against PyTorch on the CPU, in one run (issue 18's
benchmark): batch 64, 28 steps of 28 features (Fashion-MNIST's rows), hidden 128 and 512.
For each case it alternates Tandem (bench/lstm.lua through the tandem command) and PyTorch
rounds and keeps each one's best median, then prints both and the ratio (PyTorch's time over
Tandem's: above 1, Tandem is faster).
    bench/lstm_peers.py [--tandem build/tandem] [--threads 2] [--rounds 3] [--cells lstm,gru]
Debian's torch takes its BLAS from the libblas alternative: install OpenBLAS
(apt-get install libopenblas0-pthread) for a fair peer."""
import argparse
import json
import os
import platform
import subprocess
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--tandem", default="build/tandem")
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--iters", type=int, default=20)
parser.add_argument("--cells", default="lstm,gru")
parser.add_argument("--hidden", default="128,512")
args = parser.parse_args()
torch.set_num_threads(args.threads)
BATCH, STEPS, INPUT = 64, 28, 28


def torch_median_ms(cell, hidden):
    make = torch.nn.LSTM if cell == "lstm" else torch.nn.GRU
    rnn = make(INPUT, hidden, batch_first=True)
    x = torch.randn(BATCH, STEPS, INPUT, requires_grad=True)
    dy = torch.randn(BATCH, STEPS, hidden)
    times = []
    for i in range(5 + args.iters):
        start = time.perf_counter()
        y, _ = rnn(x)
        y.backward(dy)
        if i >= 5:
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return times[len(times) // 2]


def tandem_median_ms(cell, hidden):
    # layer:forward runs on the calling thread, whose OpenMP team is the process's default.
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    out = subprocess.run([args.tandem, "run", "bench/lstm.lua", f"--cell={cell}", f"--hidden={hidden}",
                          f"--threads={args.threads}", f"--iters={args.iters}"],
                         check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {args.threads} threads, "
      f"torch {torch.__version__}, batch {BATCH}, {STEPS} steps of {INPUT}")
print("| cell | hidden | Tandem ms | PyTorch ms | PyTorch / Tandem |")
print("|---|---|---|---|---|")
for cell in args.cells.split(","):
    for hidden in [int(h) for h in args.hidden.split(",")]:
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(tandem_median_ms(cell, hidden))
            theirs.append(torch_median_ms(cell, hidden))
        print(f"| {cell} | {hidden} | {min(ours):.1f} | {min(theirs):.1f} | {min(theirs) / min(ours):.2f} |", flush=True)

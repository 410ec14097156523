#!/usr/bin/python3
"""The peer of recipes/autoencoder.lua: the same net (784-1000-500-250-30 and back, ReLU, a
sigmoid output), MSE and Adam (lr 1e-3) at batch 128 in PyTorch, on Fashion-MNIST in memory;
prints training images/s over the steps after a warm-up, as the recipe's progress line does.
    bench/autoencoder_torch.py [--steps 150] [--threads 2]
Run it beside `tandem run recipes/autoencoder.lua --max_steps=150 --progress=plain` on the same
machine and compare the two figures. Debian's torch takes its BLAS from the libblas alternative:
with the reference BLAS it runs about 7x slower than with OpenBLAS (apt-get install
libopenblas0-pthread), so measure with OpenBLAS installed."""
import argparse
import gzip
import time

import numpy as np
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=150)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--batch", type=int, default=128)
parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")
args = parser.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(1)

with gzip.open(args.data, "rb") as f:
    pixels = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float32) / 255
images = torch.from_numpy(pixels)

widths = [784, 1000, 500, 250, 30, 250, 500, 1000, 784]
layers = []
for i in range(len(widths) - 1):
    layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
    if i == len(widths) - 2:
        layers.append(torch.nn.Sigmoid())
    elif widths[i + 1] != 30:
        layers.append(torch.nn.ReLU())
net = torch.nn.Sequential(*layers)
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
loss_fn = torch.nn.MSELoss()
order = torch.randperm(images.shape[0])

warmup, start = 5, None
for step in range(args.steps):
    if step == warmup:
        start = time.perf_counter()
    batch = images[order[step * args.batch:(step + 1) * args.batch]]
    optimizer.zero_grad()
    loss = loss_fn(net(batch), batch)
    loss.backward()
    optimizer.step()
elapsed = time.perf_counter() - start
print(f"torch {torch.__version__}: {(args.steps - warmup) * args.batch / elapsed:.0f} images/s "
      f"(loss {loss.item():.5f}, {args.threads} threads)")

#!/usr/bin/python3
"""recipes/fashion_mnist.lua's default run as a plain PyTorch loop, to time it to a test accuracy.

The same net (smallbn), data, normalisation, augmentation, batch, optimizer, learning-rate
schedule and evaluation as the recipe's defaults (issue 21); it stops at the first epoch whose
test accuracy reaches --target. Prints one JSON line per epoch (seconds since training began,
counting training and evaluation but not reading the files) and a JSON summary last.
What cannot match: the random streams (weights, order, flips and crops are drawn alike but not
identically) and, under `--plan=auto`, whatever layout Tandem's planner picks (see bench/race.py).

usage: race_torch.py [--target 0.925] [--epochs 10] [--threads 2] [--channels-last] [--seed 1]
                     [--data /usr/share/datasets/fashion-mnist]
"""
import argparse, gzip, json, math, os, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument('--target', type=float, default=0.925, help='stop at the first epoch reaching this test accuracy')
ap.add_argument('--epochs', type=int, default=10, help='the limit; the cosine decays over all of them, as the recipe\'s')
ap.add_argument('--threads', type=int, default=2)
ap.add_argument('--channels-last', action='store_true')
ap.add_argument('--seed', type=int, default=1)
ap.add_argument('--data', default='/usr/share/datasets/fashion-mnist')
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(a.seed)

BATCH, EVAL_BATCH, LR, MOMENTUM, WEIGHT_DECAY, WARMUP, PAD = 128, 1000, 0.1, 0.9, 5e-4, 200, 2
MEAN, STD = 0.2860, 0.3530  # the recipe's Fashion-MNIST pixel statistics


def idx_split(split):
    """Images (N x 1 x 28 x 28, normalised as T.data.mnist does: p / 255, then (x - mean) / std) and labels."""
    with gzip.open(os.path.join(a.data, f'{split}-images-idx3-ubyte.gz')) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(a.data, f'{split}-labels-idx1-ubyte.gz')) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    x = (images.astype(np.float32) / np.float32(255) - np.float32(MEAN)) / np.float32(STD)
    return torch.from_numpy(x), torch.from_numpy(labels.astype(np.int64))


def augment(x):
    """Per image, as core/data/augment.cpp: a shift of -2..2 pixels each way filling with 0 (after
    normalisation, as the recipe's), then a left-right mirror with probability 1/2."""
    n = x.shape[0]
    padded = F.pad(x[:, 0], (PAD, PAD, PAD, PAD))
    dy, dx = torch.randint(0, 2 * PAD + 1, (2, n, 1))
    flip = torch.rand(n, 1) < 0.5
    cols = torch.arange(28).expand(n, 28)
    rows = cols + dy
    cols = torch.where(flip, 27 - cols, cols) + dx
    return padded[torch.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]].unsqueeze(1)


def conv_bn_relu(cin, cout):
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]


train_x, train_y = idx_split('train')
test_x, test_y = idx_split('t10k')
started = time.perf_counter()  # the recipe's clock also starts once the files are read

# recipes/nets/smallbn.lua
net = nn.Sequential(*conv_bn_relu(1, 32), *conv_bn_relu(32, 32), nn.MaxPool2d(2),
                    *conv_bn_relu(32, 64), *conv_bn_relu(64, 64), nn.MaxPool2d(2),
                    nn.Flatten(), nn.Linear(64 * 7 * 7, 256), nn.ReLU(inplace=True), nn.Dropout(0.5),
                    nn.Linear(256, 10))
# Tandem's default init ("kaiming", core/layers/init.h): weights normal with std sqrt(2 / fan_in),
# biases 0 (PyTorch's own default is a uniform of a third of that variance); batch norm 1 and 0.
for m in net.modules():
    if isinstance(m, (nn.Conv2d, nn.Linear)):
        nn.init.kaiming_normal_(m.weight, mode='fan_in', nonlinearity='relu')
        if m.bias is not None:
            nn.init.zeros_(m.bias)
memory_format = torch.channels_last if a.channels_last else torch.contiguous_format
net = net.to(memory_format=memory_format)

# Coupled L2 as torch.optim.SGD's (core/optim/sgd.h), on weights only: Tandem exempts biases and
# batch norm's scale and shift (Parameter::decay).
decayed = [p for p in net.parameters() if p.dim() > 1]
exempt = [p for p in net.parameters() if p.dim() <= 1]
opt = torch.optim.SGD([{'params': decayed, 'weight_decay': WEIGHT_DECAY}, {'params': exempt, 'weight_decay': 0}],
                      lr=LR, momentum=MOMENTUM, nesterov=True)
steps_per_epoch = len(train_x) // BATCH  # the last, partial batch is dropped, as the recipe does
total_steps = steps_per_epoch * a.epochs


def lr_at(step):
    """T.schedule.Warmup{steps = 200, start_factor = 0.1, after = Cosine{lr, total_steps}} at a
    0-based step (core/optim/schedules.cpp): the cosine starts after the warm-up but spans all the steps."""
    if step < WARMUP:
        return LR * (0.1 + 0.9 * step / WARMUP)
    after = step - WARMUP
    return 0.5 * LR * (1 + math.cos(math.pi * after / total_steps)) if after < total_steps else 0.0


def evaluate():
    net.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(test_x), EVAL_BATCH):
            x = test_x[i:i + EVAL_BATCH].contiguous(memory_format=memory_format)
            correct += (net(x).argmax(1) == test_y[i:i + EVAL_BATCH]).sum().item()
    net.train()
    return correct / len(test_x)


step, reached, accuracy = 0, None, 0.0
for epoch in range(1, a.epochs + 1):
    order = torch.randperm(len(train_x))
    loss_sum, correct = 0.0, 0
    for b in range(steps_per_epoch):
        ids = order[b * BATCH:(b + 1) * BATCH]
        x, y = augment(train_x[ids]).contiguous(memory_format=memory_format), train_y[ids]
        for group in opt.param_groups:
            group['lr'] = lr_at(step)
        out = net(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        # The recipe sums the loss and accuracy of every step for its epoch line too.
        loss_sum += loss.item()
        correct += (out.argmax(1) == y).sum().item()
    accuracy = evaluate()
    seconds = time.perf_counter() - started
    print(json.dumps(dict(epoch=epoch, seconds=round(seconds, 3), test_accuracy=accuracy,
                          train_loss=round(loss_sum / steps_per_epoch, 5),
                          train_accuracy=round(correct / (steps_per_epoch * BATCH), 5))), flush=True)
    if accuracy >= a.target:
        reached = dict(epoch=epoch, seconds=round(seconds, 3))
        break

print(json.dumps(dict(summary=True, torch=torch.__version__.split('+')[0], threads=torch.get_num_threads(),
                      channels_last=a.channels_last, target=a.target, epochs=a.epochs, reached=reached,
                      last_accuracy=accuracy)), flush=True)

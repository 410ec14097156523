#!/usr/bin/env python3
"""Fits the analytic GPU model's float32 fractions, size curves and fixed costs
(core/plan/analytic_costs.cpp) to per-layer measurements.

    build/tandem run bench/gpu_fit.lua --rows=/tmp/rows.csv
    bench/gpu_fit.py /tmp/rows.csv [--fp32-tflops=67 --bandwidth-gbs=4800]

Rows: each kernel of each top-level layer's forward or backward, with the layer's measured time.
The model of one kernel of a FLOP class c, doing W FLOPs (twice the forward's in backward) as a
matrix product whose narrowest dimension is s:

    fixed_c + W / (peak x fraction_c x s / (s + half_c))
  = fixed_c + (W / peak) x per_flop_c + (W / peak / s) x per_narrow_flop_c

(per_flop = 1 / fraction, per_narrow_flop = half / fraction: the second term is traffic, as
W / s = 2 x rows x the wider of the other two), and of a pooling or memory kernel moving B
bytes (twice in backward): fixed + (B / bandwidth) x per_byte. Both are linear in the
coefficients, so a layer's time is a linear sum
over its kernels, plus one constant per layer: what timing layers one by one adds (each waits
for the GPU, where a step's launches run ahead), which the model leaves out. Least squares,
non-negative (Lawson and Hanson's active set), each row weighted by 1 / sqrt(its time): big
layers decide a step, small ones its fixed costs. Prints each class's figures per pass, the
largest misses, and each net's step predicted against the measured one (less the update).
"""
import argparse
import csv
from collections import OrderedDict

import numpy as np

FLOP_CLASSES = ['conv 3x3', 'conv 1x1', 'conv other', 'gemm']
BYTE_CLASSES = ['pool', 'memory']


def nnls(a, b, iterations=500):
    """min |a x - b| subject to x >= 0 (Lawson-Hanson)."""
    n = a.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    for _ in range(iterations):
        w = a.T @ (b - a @ x)
        if passive.all() or (w[~passive] <= 1e-12).all():
            break
        j = np.argmax(np.where(passive, -np.inf, w))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            bad = passive & (z <= 0)
            alpha = np.min(x[bad] / (x[bad] - z[bad]))
            x = x + alpha * (z - x)
            passive &= x > 1e-15
    return x


def layer_features(kernels, factor, flops_per_ms, bytes_per_ms):
    """[count, W, W/s] per FLOP class, then [count, B] per byte class, then the per-layer
    constant."""
    f = np.zeros(3 * len(FLOP_CLASSES) + 2 * len(BYTE_CLASSES) + 1)
    for k in kernels:
        if k['class'] in FLOP_CLASSES:
            i = 3 * FLOP_CLASSES.index(k['class'])
            work = factor * float(k['flops']) / flops_per_ms
            dims = [float(k[d]) for d in ('rows', 'columns', 'inner') if float(k[d]) > 0]
            f[i] += 1
            f[i + 1] += work
            f[i + 2] += work / min(dims) if dims else 0
        else:
            i = 3 * len(FLOP_CLASSES) + 2 * BYTE_CLASSES.index(k['class'])
            f[i] += 1
            f[i + 1] += factor * float(k['bytes']) / bytes_per_ms
    f[-1] = 1
    return f


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('rows')
    p.add_argument('--fp32-tflops', type=float, default=67.0)
    p.add_argument('--bandwidth-gbs', type=float, default=4800.0)
    args = p.parse_args()
    flops_per_ms, bytes_per_ms = args.fp32_tflops * 1e9, args.bandwidth_gbs * 1e6
    layers = OrderedDict()
    for r in csv.DictReader(open(args.rows)):
        key = (r['net'], r['batch'], r['layer'], r['pass'])
        layers.setdefault(key, {'row': r, 'kernels': []})['kernels'].append(r)
    steps = {}
    for pass_ in ('forward', 'backward'):
        factor = 1.0 if pass_ == 'forward' else 2.0
        keys = [k for k in layers if k[3] == pass_]
        a = np.array([layer_features(layers[k]['kernels'], factor, flops_per_ms, bytes_per_ms) for k in keys])
        y = np.array([float(layers[k]['row']['measured_ms']) for k in keys])
        w = 1 / np.sqrt(y)
        x = nnls(a * w[:, None], y * w)
        predicted = a @ x
        print(f'{pass_}: {len(y)} layers; timing one by one adds {x[-1] * 1e3:.1f} us a layer')
        # As analytic_costs.cpp's table takes them: fixed us, then the time of a FLOP (or byte)
        # at the peak's rate, and of a FLOP over the narrowest dimension.
        for i, c in enumerate(FLOP_CLASSES):
            print(f'  {c:10s} {{{x[3 * i] * 1e3:.1f}, {x[3 * i + 1]:.3f}, {x[3 * i + 2]:.1f}}}')
        for i, c in enumerate(BYTE_CLASSES):
            j = 3 * len(FLOP_CLASSES) + 2 * i
            print(f'  {c:10s} {{{x[j] * 1e3:.1f}, {x[j + 1]:.3f}, 0}}')
        ratio = predicted / y
        for j in np.argsort(-np.abs(np.log(ratio)))[:6]:
            print(f'    {" ".join(keys[j][:3]):28s} predicted / measured {ratio[j]:.2f}')
        for k, model in zip(keys, predicted - x[-1]):
            run = layers[k]['row']
            s = steps.setdefault((k[0], k[1]), [0.0, float(run['step_ms']) - float(run['update_ms'])])
            s[0] += model
    for (net, batch), (model, measured) in steps.items():
        print(f'{net} batch {batch}: step (less the update) {model:.2f} ms predicted, {measured:.2f} measured: '
              f'{model / measured:.2f}')


if __name__ == '__main__':
    main()

#!/usr/bin/python3
"""Tandem against PyTorch on the CPU, measured in one run, alternating, as ratios.

For each reference net of ../shared/peers (lenet5, smallbn, resnet20, alexnet64) and each
thread count, runs `tandem bench NET --json` and the peers' bench_torch.py one after the other
(ours first, then theirs, then ours again, ...) and prints images/s side by side with the
ratio ours/PyTorch (median of the repeats), plus GFLOP/s of our whole step against the
machine's FMA peak (239 GFLOP/s per core, AVX-512).

usage: bench/peers.py [--threads 1,2] [--nets lenet5,smallbn,...] [--repeats 2] [--unset-openblas]
       [--peers ../shared/peers] [--tandem build/tandem] [--json results.jsonl]
"""
import argparse, json, os, statistics, subprocess, sys

NETS = {  # name: (our net file, batch size the peers' README uses)
    'lenet5': ('recipes/nets/lenet5.lua', 64),
    'smallbn': ('recipes/nets/smallbn.lua', 128),
    'resnet20': ('recipes/nets/resnet20.lua', 128),
    'alexnet64': ('recipes/nets/alexnet64.lua', 64),
}
PEAK_PER_CORE = 239.0

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
ap = argparse.ArgumentParser()
ap.add_argument('--threads', default='1,2')
ap.add_argument('--nets', default=','.join(NETS))
ap.add_argument('--repeats', type=int, default=2)
ap.add_argument('--iters', type=int, default=0, help='timed iterations per run (0: automatic)')
ap.add_argument('--peers', default=os.path.join(root, '..', 'shared', 'peers'))
ap.add_argument('--tandem', default=os.path.join(root, 'build', 'tandem'))
ap.add_argument('--channels-last-torch', action='store_true', help='also time PyTorch channels-last')
ap.add_argument('--unset-openblas', action='store_true',
                help='unset OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE for both (benchmarks only)')
ap.add_argument('--json', help='append every measurement as a JSON line to this file')
a = ap.parse_args()


def env_for(threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    if a.unset_openblas:
        env.pop('OPENBLAS_CORETYPE', None)
        env.pop('OPENBLAS_L2_SIZE', None)
    return env


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith('{'):
            return json.loads(line)
    raise RuntimeError('no JSON line in output:\n' + text)


def ours(net, threads):
    path, batch = NETS[net]
    cmd = [a.tandem, 'bench', os.path.join(root, path), f'--batch={batch}', f'--threads={threads}', '--json']
    if a.iters:
        cmd.append(f'--iters={a.iters}')
    out = subprocess.run(cmd, env=env_for(threads), capture_output=True, text=True, check=True, cwd=root)
    return last_json(out.stdout)


def theirs(net, threads, channels_last=False):
    batch = NETS[net][1]
    cmd = ['/usr/bin/python3', os.path.join(a.peers, 'bench_torch.py'), '--net', net, '--batch', str(batch),
           '--threads', str(threads)]
    if channels_last:
        cmd.append('--channels-last')
    if a.iters:
        cmd += ['--iters', str(a.iters)]
    out = subprocess.run(cmd, env=env_for(threads), capture_output=True, text=True, check=True)
    return last_json(out.stdout)


rows = []
for threads in [int(t) for t in a.threads.split(',')]:
    for net in a.nets.split(','):
        mine, peer, peer_cl = [], [], []
        for _ in range(a.repeats):
            r = ours(net, threads); mine.append(r)
            p = theirs(net, threads); peer.append(p)
            if a.channels_last_torch and net == 'resnet20':
                peer_cl.append(theirs(net, threads, True))
            if a.json:
                with open(a.json, 'a') as f:
                    f.write(json.dumps({'ours': r, 'torch': p}) + '\n')
        m = statistics.median(r['images_per_s'] for r in mine)
        t = statistics.median(p['img_per_s_median'] for p in peer)
        gflops = statistics.median(r['gflops'] for r in mine)
        row = dict(net=net, threads=threads, ours=m, torch=t, ratio=m / t, gflops=gflops,
                   peak_fraction=gflops / (PEAK_PER_CORE * threads))
        if peer_cl:
            row['torch_channels_last'] = statistics.median(p['img_per_s_median'] for p in peer_cl)
        rows.append(row)
        print(f"{net:10s} {threads} thr  ours {m:8.1f} img/s  torch {t:8.1f} img/s  ratio {m / t:5.2f}"
              f"  ours {gflops:6.1f} GFLOP/s ({100 * row['peak_fraction']:.0f}% of peak)", flush=True)

print()
print('| net | threads | Tandem img/s | PyTorch img/s | ratio | Tandem GFLOP/s (% of FMA peak) |')
print('|---|---|---|---|---|---|')
for r in rows:
    print(f"| {r['net']} | {r['threads']} | {r['ours']:.0f} | {r['torch']:.0f} | {r['ratio']:.2f} | "
          f"{r['gflops']:.0f} ({100 * r['peak_fraction']:.0f}%) |")
print(f"\nOPENBLAS_CORETYPE/L2_SIZE: {'unset' if a.unset_openblas else 'as set in the environment'}")

#!/usr/bin/python3
"""Tandem against PyTorch on the CPU, measured in one run, alternating, as ratios.

For each reference net of ../shared/peers (lenet5, smallbn, resnet20, alexnet64) and each
thread count, runs `tandem bench NET --json` and the peers' bench_torch.py one after the other
(ours first, then theirs, then ours again, ...) and prints images/s side by side with the
ratio ours/PyTorch (median of the repeats), plus GFLOP/s of our whole step (the direct form's
multiplications: Winograd does fewer) against the machine's FMA peak as `tandem bench`
measures it (T.cpu_peak: its widest ISA, cached per CPU), printed first with the machine.

usage: bench/peers.py [--threads 1,2] [--nets lenet5,smallbn,...] [--repeats 2] [--unset-openblas]
       [--python PY[,PY2...]] [--peers ../shared/peers] [--tandem build/tandem] [--json results.jsonl]
       [--device cuda [--batch N] [--tf32]] [--precision bf16|fp16]
--python: the Pythons whose PyTorch runs the peers' benchmark (default: Debian's /usr/bin/python3
on the CPU, this one on a GPU), each a column; the ratio is against the first. On the CPU each
PyTorch runs in its default layout and channels-last, and the better counts (`make bench-peers
PEERS=pypi` puts today's PyTorch from PyPI in .venv-torch and runs it beside Debian's 1.13).
--device cuda: both on the first GPU, PyTorch through bench/torch_cuda.py (the peers' nets,
this Python's torch), ours through `tandem bench --device=cuda`; --batch overrides the nets';
--tf32 lets both use TF32 tensor cores (float32 FMA math otherwise); --nets may also name
resnet50, vgg16 and alexnet224 (against torchvision's).
--precision bf16 (CPU): mixed precision on both sides, ours `tandem bench --precision=bf16`,
PyTorch's forward under bf16 autocast (bench/torch_autocast.py); the peak quoted stays the
float32 FMA peak (bf16's dot products do twice its multiply-adds an instruction). With --device
cuda, bf16 or fp16: PyTorch under CUDA autocast (fp16 with its GradScaler; bench/torch_cuda.py),
ours `tandem bench --device=cuda --precision=...` (the net's step, without the engine's loss
scaling: one pass over the gradients fewer than a scaled run).
"""
import argparse, json, os, statistics, sys

from checked_run import run

NETS = {  # name: (our net file, batch size the peers' README uses)
    'lenet5': ('recipes/nets/lenet5.lua', 64),
    'smallbn': ('recipes/nets/smallbn.lua', 128),
    'resnet20': ('recipes/nets/resnet20.lua', 128),
    'alexnet64': ('recipes/nets/alexnet64.lua', 64),
}
# On GPUs also the 224-pixel nets, against torchvision's (bench/torch_cuda.py): --nets names them.
NETS_224 = {
    'resnet50': ('recipes/nets/resnet50.lua', 64),
    'vgg16': ('recipes/nets/vgg16.lua', 64),
    'alexnet224': ('recipes/nets/alexnet224.lua', 128),
}

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
ap.add_argument('--device', default='cpu', choices=['cpu', 'cuda'])
ap.add_argument('--batch', type=int, default=0, help='batch size of every net (0: the peers\' own)')
ap.add_argument('--tf32', action='store_true', help='GPU: TF32 tensor cores for both')
ap.add_argument('--precision', default='fp32', choices=['fp32', 'bf16', 'fp16'],
                help='mixed precision on both sides: bf16 on the CPU (PyTorch: bench/torch_autocast.py), '
                     'bf16 or fp16 on a GPU (PyTorch: bench/torch_cuda.py under autocast)')
ap.add_argument('--python', default='', help="the peers' Pythons, comma-separated (the ratio is against the first)")
a = ap.parse_args()
if a.tf32 and a.device != 'cuda':
    ap.error('--tf32 is for --device cuda (TF32 tensor cores are a GPU\'s)')
if a.precision == 'fp16' and a.device != 'cuda':
    ap.error('--precision fp16 is for --device cuda (the CPU trains in fp32 and bf16)')
if a.device == 'cuda':
    NETS.update(NETS_224)
unknown = [n for n in a.nets.split(',') if n not in NETS]
if unknown:
    ap.error(f"unknown net {', '.join(unknown)} (known{' on GPUs' if a.device == 'cuda' else ''}: {', '.join(NETS)})")


def env_for(threads):
    env = dict(os.environ)
    if threads > 0:  # 0 (on a GPU): the libraries' own defaults
        env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    if a.unset_openblas:
        env.pop('OPENBLAS_CORETYPE', None)
        env.pop('OPENBLAS_L2_SIZE', None)
    return env


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith('{'):
            return json.loads(line)
    raise RuntimeError('no JSON line in output:\n' + text)


def batch_of(net):
    return a.batch or NETS[net][1]


def ours(net, threads):
    path = NETS[net][0]
    cmd = [a.tandem, 'bench', os.path.join(root, path), f'--batch={batch_of(net)}', f'--threads={threads}',
           f'--device={a.device}', f'--precision={a.precision}', '--json']
    if a.device == 'cuda':
        cmd.append('--benchmark')  # timed algorithm choice, as the peer's cudnn.benchmark
        if a.tf32:
            cmd.append('--tf32')
    if a.iters:
        cmd.append(f'--iters={a.iters}')
    out = run(cmd, env=env_for(threads), cwd=root)
    return last_json(out.stdout)


def theirs(net, threads, python, channels_last=False):
    batch = batch_of(net)
    if a.device == 'cuda':
        cmd = [python, os.path.join(here, 'torch_cuda.py'), '--net', net, '--batch', str(batch),
               '--peers', a.peers]
    elif a.precision == 'bf16':
        cmd = [python, os.path.join(here, 'torch_autocast.py'), '--net', net, '--batch',
               str(batch), '--threads', str(threads), '--peers', a.peers]
    else:
        cmd = [python, os.path.join(a.peers, 'bench_torch.py'), '--net', net, '--batch',
               str(batch), '--threads', str(threads)]
    if channels_last:
        cmd.append('--channels-last')
    if a.device == 'cuda' and a.tf32:
        cmd.append('--tf32')
    if a.device == 'cuda':
        cmd += ['--precision', a.precision]
    if a.iters:
        cmd += ['--iters', str(a.iters)]
    out = run(cmd, env=env_for(threads))
    return last_json(out.stdout)


gpu = a.device == 'cuda'
pythons = (a.python or (sys.executable if gpu else '/usr/bin/python3')).split(',')
torch_of = {py: run([py, '-c', 'import torch; print(torch.__version__)']).stdout.strip().split('+')[0]
            for py in pythons}
# The layouts each PyTorch is timed in: on the CPU both (the better counts); on a GPU its
# default, and channels-last when asked.
layouts = [False, True] if not gpu or a.channels_last_torch else [False]

rows = []
# On a GPU the threads do not matter: one pass, with every core for the host side.
for threads in [0] if gpu else [int(t) for t in a.threads.split(',')]:
    for net in a.nets.split(','):
        mine, peer = [], {(py, cl): [] for py in pythons for cl in layouts}
        for _ in range(a.repeats):
            r = ours(net, threads); mine.append(r)
            if not gpu and len(mine) == 1 and net == a.nets.split(',')[0]:
                print(f"machine: {r['cpu']}, {r['isa']}: measured FMA peak {r['peak_gflops']:.0f} GFLOP/s "
                      f"for {threads} thread(s) (T.cpu_peak)", flush=True)
            for py, cl in peer:
                p = theirs(net, threads, py, cl); peer[py, cl].append(p)
                if a.json:
                    with open(a.json, 'a') as f:
                        f.write(json.dumps({'ours': r, 'torch': p, 'python': py}) + '\n')
        m = statistics.median(r['images_per_s'] for r in mine)
        gflops = statistics.median(r['gflops'] for r in mine)
        rate = {key: statistics.median(p['img_per_s_median'] for p in runs) for key, runs in peer.items()}
        # Per Python: its better layout's images/s, and which layout that was.
        best = {py: max((rate[py, cl], cl) for cl in layouts) for py in pythons}
        first = best[pythons[0]][0]
        row = dict(net=net, threads=threads, ours=m, ratio=m / first, gflops=gflops,
                   peak_fraction=0 if gpu else gflops / mine[0]['peak_gflops'],
                   torch={torch_of[py]: dict(img_per_s=v, channels_last=cl) for py, (v, cl) in best.items()})
        rows.append(row)
        theirs_text = '  '.join(f"torch {torch_of[py]} {v:9.1f} img/s{' (channels-last)' if cl else ''}"
                                for py, (v, cl) in best.items())
        if gpu:
            print(f"{net:10s} batch {batch_of(net)}  ours {m:9.1f} img/s  {theirs_text}  ratio {m / first:5.2f}"
                  f"  ours {gflops:7.1f} GFLOP/s", flush=True)
        else:
            print(f"{net:10s} {threads} thr  ours {m:8.1f} img/s  {theirs_text}  ratio {m / first:5.2f}"
                  f"  ours {gflops:6.1f} GFLOP/s ({100 * row['peak_fraction']:.0f}% of peak)", flush=True)

print()
if gpu:
    sys.exit(0)
versions = [torch_of[py] for py in pythons]
print('| net | threads | Tandem img/s | ' + ' | '.join(f'PyTorch {v} img/s' for v in versions)
      + f' | ratio to {versions[0]} | Tandem GFLOP/s (% of FMA peak) |')
print('|---|---|---|' + '---|' * len(versions) + '---|---|')
for r in rows:
    cells = ' | '.join(f"{r['torch'][v]['img_per_s']:.0f}{' (cl)' if r['torch'][v]['channels_last'] else ''}"
                       for v in versions)
    print(f"| {r['net']} | {r['threads']} | {r['ours']:.0f} | {cells} | {r['ratio']:.2f} | "
          f"{r['gflops']:.0f} ({100 * r['peak_fraction']:.0f}%) |")
print("\n(cl): PyTorch's channels-last layout was the faster of its two")
print("GFLOP/s count each convolution's multiplications in the direct form: Winograd's (Tandem's 3x3\n"
      "and 5x5 layers on the CPU) do fewer, so a step can pass the FMA peak")
if a.precision != 'fp32':
    print(f"{a.precision}: both sides' convolutions and Linear layers on 16-bit operands (PyTorch: autocast); the\n"
          "peak is float32's, which 16-bit dot products pass (two multiply-adds where an FMA does one)")
print(f"OPENBLAS_CORETYPE/L2_SIZE: {'unset' if a.unset_openblas else 'as set in the environment'}")

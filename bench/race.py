#!/usr/bin/python3
"""Time to a test accuracy: `make run`'s Fashion-MNIST recipe against the same training in PyTorch.

Issue 21: the recipe should reach 92.5% test accuracy in less than half the time PyTorch needs
for the same net and optimizer on the same machine, measured in the same run. Each round runs,
one after the other, `tandem run recipes/fashion_mnist.lua --plan=auto` (as `make run` does)
twice: first profiling the net, then as a second run does, planning from the figures the first
kept (--tandem-threads adds a run on one device of that many threads, without the planner), and
bench/race_torch.py (the recipe's defaults as a plain PyTorch loop) under each --python, each
stopping at the first epoch whose test accuracy reaches --target. Both clocks start once the
data are read from disk and stop after that epoch's test: training and testing count on both
sides (Tandem's also its planner and its per-epoch checkpoints, which `make run` writes).
Prints each run as it ends (accuracy per epoch, load average before and after), then a table of
the medians over --rounds and the ratio PyTorch's time / Tandem's (the issue asks for 2 or more).

usage: bench/race.py [--target 0.925] [--epochs 10] [--rounds 1] [--threads N]
       [--python PY[,PY2...]] [--channels-last-torch] [--tandem-threads N] [--tandem build/tandem]
       [--json results.jsonl]
--epochs is the limit on both sides, and the learning rate's cosine decays over all of it, as
the recipe's does: change it and both train on another schedule. --threads: PyTorch's (default:
the machine's cores, which --plan=auto spreads over Tandem's devices). --python: the Pythons
whose PyTorch races (default Debian's /usr/bin/python3); the ratio is against the first.
--channels-last-torch: each PyTorch also in channels-last, the faster layout counting.
"""
import argparse, json, os, statistics, sys, tempfile, time

from checked_run import run

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
ap = argparse.ArgumentParser()
ap.add_argument('--target', type=float, default=0.925)
ap.add_argument('--epochs', type=int, default=10)
ap.add_argument('--rounds', type=int, default=1)
ap.add_argument('--threads', type=int, default=os.cpu_count())
ap.add_argument('--python', default='/usr/bin/python3')
ap.add_argument('--channels-last-torch', action='store_true')
ap.add_argument('--tandem-threads', type=int, default=0, help='also Tandem on one device of N threads (0: not)')
ap.add_argument('--tandem', default=os.path.join(root, 'build', 'tandem'))
ap.add_argument('--json', help='append every run as a JSON line to this file')
a = ap.parse_args()
# Paths as given from here, since Tandem runs from the repository's root (bare names: the PATH's).
a.tandem = os.path.abspath(a.tandem) if os.sep in a.tandem else a.tandem
pythons = [os.path.abspath(py) if os.sep in py else py for py in a.python.split(',')]


def load():
    with open('/proc/loadavg') as f:
        return float(f.read().split()[0])


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith('{')]


def tandem(label, args):
    """The recipe to the target; its epochs from its metrics log (`elapsed`: since the data were read)."""
    with tempfile.TemporaryDirectory(prefix='race-') as tmp:
        out = run([a.tandem, 'run', os.path.join(root, 'recipes', 'fashion_mnist.lua'), *args,
                   f'--epochs={a.epochs}', f'--target_accuracy={a.target}', '--progress=none',
                   f'--log={tmp}/metrics.jsonl', f'--checkpoints={tmp}/checkpoints'], cwd=root)
        with open(f'{tmp}/metrics.jsonl') as f:
            epochs = [dict(epoch=e['epoch'], seconds=e['elapsed'], test_accuracy=e['test_accuracy'])
                      for e in json_lines(f.read())]
    # The planner's choice, and the layout line with its batch-norm mode (statistics per
    # micro-batch, unlike PyTorch's over the batch, unless it says otherwise).
    layout = [line.replace('planner: ', '') for line in out.stdout.splitlines()
              if line.startswith('planner: chose') or ', batch norm ' in line]
    return dict(side='tandem', label=label, epochs=epochs, note='; '.join(layout))


def torch(python, channels_last):
    cmd = [python, os.path.join(here, 'race_torch.py'), '--target', str(a.target), '--epochs',
           str(a.epochs), '--threads', str(a.threads)] + (['--channels-last'] if channels_last else [])
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
    lines = json_lines(run(cmd, env=env).stdout)
    summary = lines[-1]
    label = f"PyTorch {summary['torch']}{' channels-last' if channels_last else ''}"
    return dict(side='torch', label=label, python=python, version=summary['torch'],
                channels_last=channels_last, epochs=lines[:-1], note='')


def reached(r):
    """(epoch, seconds) of the first epoch at the target, or None."""
    return next(((e['epoch'], e['seconds']) for e in r['epochs'] if e['test_accuracy'] >= a.target), None)


# The machine, as every benchmark here prints it (T.machine_line: model, cores, ISA, FMA peak).
with tempfile.NamedTemporaryFile('w', suffix='.lua') as f:
    f.write("print(require('tandem').machine_line())\n")
    f.flush()
    print('machine:', run([a.tandem, 'run', f.name]).stdout.strip().splitlines()[-1], flush=True)
print(f'target {a.target}, at most {a.epochs} epochs; PyTorch on {a.threads} thread(s)', flush=True)

# --plan=auto keeps what its planner measured for later runs of the same net and build: the
# first run measures (--plan_cache=refresh: afresh, whatever an earlier race left), the second
# plans from its figures in about a second, as a user's second `make run` does. Both count,
# each with its ratio; the cache is the race's own, not the user's.
cache = tempfile.TemporaryDirectory(prefix='race-cache-')
os.environ['TANDEM_CACHE_DIR'] = cache.name
contestants = [lambda: tandem('Tandem --plan=auto, measuring', ['--plan=auto', '--plan_cache=refresh']),
               lambda: tandem('Tandem --plan=auto, measured', ['--plan=auto'])]
if a.tandem_threads:
    contestants.append(lambda: tandem(f'Tandem --threads={a.tandem_threads}', [f'--threads={a.tandem_threads}']))
for py in pythons:
    for cl in [False, True] if a.channels_last_torch else [False]:
        contestants.append(lambda py=py, cl=cl: torch(py, cl))

results = []  # every run, in order
for round_ in range(1, a.rounds + 1):
    for contestant in contestants:  # alternating, so a slow spell of the machine hits both sides
        before, t0 = load(), time.time()
        r = contestant()
        r.update(round=round_, load_before=before, load_after=load(), wall_s=round(time.time() - t0, 1),
                 reached=reached(r))
        results.append(r)
        got = (f"{a.target} at epoch {r['reached'][0]} in {r['reached'][1]:.1f} s" if r['reached']
               else f"not reached in {len(r['epochs'])} epochs")
        accuracies = ' '.join(f"{e['test_accuracy']:.4f}" for e in r['epochs'])
        print(f"round {round_}  {r['label']:26s} {got}  (test accuracy per epoch: {accuracies}; "
              f"process {r['wall_s']:.0f} s; load {before:.1f} -> {r['load_after']:.1f}) {r['note']}", flush=True)
        if a.json:
            with open(a.json, 'a') as f:
                f.write(json.dumps(dict(r, target=a.target, threads=a.threads)) + '\n')

# Medians over the rounds, per contestant (None where a round missed the target).
labels = list(dict.fromkeys(r['label'] for r in results))
best = {}
print('\n| run | rounds at target | epochs | seconds to target (median) |')
print('|---|---|---|---|')
for label in labels:
    runs = [r for r in results if r['label'] == label]
    hits = [r['reached'] for r in runs if r['reached']]
    seconds = statistics.median(s for _, s in hits) if len(hits) == len(runs) else None
    best[label] = seconds
    epochs = ','.join(str(e) for e, _ in hits) or '-'
    print(f"| {label} | {len(hits)}/{len(runs)} | {epochs} | {f'{seconds:.1f}' if seconds else 'not reached'} |")

# Per Python, its faster layout; the ratio of its time to each Tandem run's.
print()
for py in pythons:
    theirs = [(best[r['label']], r['label']) for r in results if r.get('python') == py and best[r['label']]]
    if not theirs:
        print(f'{py}: no PyTorch run reached the target; no ratio')
        continue
    seconds, label = min(theirs)
    for mine in [l for l in labels if l.startswith('Tandem')]:
        ratio = f'{seconds / best[mine]:.2f}' if best[mine] else 'none (Tandem missed the target)'
        print(f'time to {a.target}: {label} / {mine} = {ratio}')

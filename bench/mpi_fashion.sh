#!/bin/sh
# Fashion-MNIST on 2 MPI ranks (loopback): synchronous SGD and model averaging every k steps.
#   bench/mpi_fashion.sh [EPOCHS] [THREADS]    (from the source root, after a build)
# Prints one line per run: steps/s (training time only), test accuracy after the last epoch,
# and the bytes rank 0 sent per step.
set -eu
epochs=${1:-3}
threads=${2:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d)
printf '%-18s %8s %8s %14s\n' run steps/s test_acc bytes/step
for k in 0 1 4 16; do
  log=$out/k$k.jsonl
  text=$(mpirun --oversubscribe -np 2 --mca btl self,vader,tcp build/tandem run recipes/fashion_mnist.lua \
           --epochs="$epochs" --threads="$threads" --average_every="$k" --log="$log" \
           --checkpoints="$out/ck$k" 2>&1)
  bytes=$(printf '%s\n' "$text" | sed -n 's/.*sent \([0-9]*\) bytes per step.*/\1/p')
  name=$([ "$k" = 0 ] && echo "synchronous SGD" || echo "averaging k=$k")
  python3 - "$log" "$name" "$bytes" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
steps, seconds = rows[-1]["step"], sum(r["seconds"] for r in rows)
print("%-18s %8.2f %8.4f %14s" % (sys.argv[2], steps / seconds, rows[-1]["test_accuracy"], sys.argv[3]))
PY
done
rm -rf "$out"

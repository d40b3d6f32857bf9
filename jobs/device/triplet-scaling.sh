#!/usr/bin/env bash
# On a GPU machine with 2 or more GPUs: strong scaling of `tdsolve triplet`
# (float32, no cutoff), one rank per GPU, for n = 20000 (twice: the spread)
# and n = 40000; wall time (--stats total_s) and kernel time per rank, and
# whether the files' sums are byte-identical. Needs .devbin and .devrun.
set -uo pipefail
cd "$(dirname "$0")/../.."
T=$PWD/.devbin/tdsolve
tmp=${TMPDIR:-/tmp}/tdsolve-scaling
rm -rf "$tmp" && mkdir -p "$tmp"
gpus=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
date -u +%FT%TZ
for n in ${SIZES:-20000 40000}; do
  python3 -c "import numpy as np; r=np.random.default_rng($n); np.save('$tmp/p$n.npy', r.random(($n,3))*$n**(1/3))"
done
printf '%6s %5s %4s %9s %9s %8s\n' n ranks try total_s kernel_s identical
for n in ${SIZES:-20000 40000}; do
  for try in 1 2; do
    [ "$n" != 20000 ] && [ "$try" = 2 ] && continue
    for r in 1 $gpus; do
      timeout 300 bash .devrun/on-device.sh mpirun -np $r $T triplet --backend cuda --input "$tmp/p$n.npy" \
        --output "$tmp/s$n-$r.h5" --overwrite --progress none --quiet --stats "$tmp/st.json" || echo "run failed"
      same=$(python3 -c "
import h5py
a, b = h5py.File('$tmp/s$n-1.h5'), h5py.File('$tmp/s$n-$r.h5')
print(all(a[k][()].tobytes() == b[k][()].tobytes() for k in ('energy', 'energy_per_point', 'forces')))")
      python3 -c "
import json; s = json.load(open('$tmp/st.json'))
print('%6d %5d %4d %9.3f %9.3f %8s' % ($n, $r, $try, s['total_s'], s['compute_s'], '$same'))"
    done
  done
done

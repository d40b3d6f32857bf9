#!/usr/bin/env bash
# On the GPU machine: where a culled triplet run's time goes (--stats) at
# n = SIDE^3 (default 64) on the jittered lattices of
# jobs/bench/triplet_vs_lammps.py: ATM (2.5, 2.5) and SW (Si), float64.
set -uo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .devbin
for pack in .devpack/*.tar.xz; do [ -f "$pack" ] && tar -C .devbin -xJf "$pack"; done
side=${SIDE:-64}
work=$(mktemp -d)
python3 - "$work" "$side" <<'PY'
import sys, os, numpy as np
sys.path.insert(0, "jobs/bench")
import triplet_vs_lammps as t
d, side = sys.argv[1], int(sys.argv[2])
np.save(os.path.join(d, "atm.npy"), t.lattice(side, 1.0, 0.05))
np.save(os.path.join(d, "sw.npy"), t.lattice(side, 2.35, 0.1))
PY
nvidia-smi --query-gpu=name --format=csv,noheader
for kind in atm sw; do
  if [ $kind = atm ]; then pot="--nu 1 --cutoff 2.5 --cutoff-triple 2.5"; else pot="--potential sw"; fi
  for run in 1 2; do
    /usr/bin/time -f "$kind run $run: wall %e s" bash .devrun/on-device.sh .devbin/tdsolve triplet \
      --input "$work/$kind.npy" $pot --precision float64 --backend cuda --cull on \
      --output "$work/o.h5" --overwrite --progress none --stats "$work/s.json" 2>&1 | grep -E "culled|summed|wall"
    python3 -c "import json; d=json.load(open('$work/s.json')); print({k: d[k] for k in ('total_s','compute_s','transfer_s','write_s','chunks')})"
  done
done
rm -rf "$work"

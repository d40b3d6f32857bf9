#!/usr/bin/env bash
# On the GPU machine: where a culled triplet run's time goes (--stats, its
# set-up phases and the /progress/sums it keeps) at n = side^3 for each of
# SIDES (default 64) on the jittered lattices of
# jobs/bench/triplet_vs_lammps.py: ATM (2.5, 2.5) and SW (Si), float64.
# ONLY=atm|sw runs one; RUNS (default 2) runs of each.
set -uo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .devbin
for pack in .devpack/*.tar.xz; do [ -f "$pack" ] && tar -C .devbin -xJf "$pack"; done
work=$(mktemp -d)
nvidia-smi --query-gpu=name --format=csv,noheader
for side in ${SIDES:-64}; do
  python3 - "$work" "$side" <<'PY'
import sys, os, numpy as np
sys.path.insert(0, "jobs/bench")
import triplet_vs_lammps as t
d, side = sys.argv[1], int(sys.argv[2])
np.save(os.path.join(d, "atm.npy"), t.lattice(side, 1.0, 0.05))
np.save(os.path.join(d, "sw.npy"), t.lattice(side, 2.35, 0.1))
PY
  for kind in ${ONLY:-atm sw}; do
    if [ $kind = atm ]; then pot="--nu 1 --cutoff 2.5 --cutoff-triple 2.5"; else pot="--potential sw"; fi
    for run in $(seq 1 "${RUNS:-2}"); do
      /usr/bin/time -f "side $side $kind run $run: wall %e s" bash .devrun/on-device.sh .devbin/tdsolve triplet \
        --input "$work/$kind.npy" $pot --precision float64 --backend cuda --cull on \
        --output "$work/o.h5" --overwrite --progress none --stats "$work/s.json" 2>&1 | grep -E "culled|summed|wall"
      python3 -c "
import json, h5py
d = json.load(open('$work/s.json'))
print({k: d[k] for k in ('total_s', 'compute_s', 'transfer_s', 'write_s', 'chunks')})
print('  set-up %.2f s:' % sum(d['setup_s'].values()), ', '.join('%s %.2f' % kv for kv in d['setup_s'].items() if kv[1] >= 0.02))
s = h5py.File('$work/o.h5')['progress/sums']
print('  /progress/sums', s.shape, 'first_limb', int(s.attrs['first_limb']))"
    done
  done
done
rm -rf "$work"

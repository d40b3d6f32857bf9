#!/usr/bin/env bash
# Strong scaling on the GPUs of one host, one device call (needs .devbin and
# .devrun): the same hist run (HIST_N points, float32, d = 3, 200 bins) on
# 1, 2, ... GPUs (one rank per GPU), twice each. Prints per rank count the
# best wall time, the run's own total, the slowest rank's compute time, the
# efficiency t(1) / (R · t(R)) of both, and whether the counts are the same.
# CULL_RANGE=R: the culled hist instead (50 bins over [0, R], --cull on,
# float32), e.g. HIST_N=100000000 CULL_RANGE=0.02 (issue 29's strong scaling).
# Also prints rank 0's set-up phases (--stats "setup_s") of each rank count.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=/tmp/tdsolve-scaling
rm -rf "$out" && mkdir -p "$out"
T=.devbin/tdsolve
HIST_N=${HIST_N:-1000000}
gpus=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
if [ -n "${CULL_RANGE:-}" ]; then
  what=(--bins 50 --range "0:$CULL_RANGE" --cull on)
else
  what=(--bins 200 --range 0:1.8)
fi
for r in ${RANKS:-$(seq 1 "$gpus")}; do
  for rep in 1 2; do
    t0=$(date +%s.%N)
    # --bind-to none: mpirun binds each of 1 or 2 ranks to one core by
    # default, which would leave the set-up (Morton order, tile list) one
    # thread
    timeout 300 bash .devrun/on-device.sh mpirun --bind-to none -np $r $T hist --backend cuda \
      --generate uniform:$HIST_N:3:7 "${what[@]}" --output /tmp/h_$r.h5 --overwrite --quiet \
      --stats "$out/hist_${r}_${rep}.json"
    t1=$(date +%s.%N)
    echo "$r $rep $(python3 -c "print($t1-$t0)")" >> "$out/hist_wall.txt"
  done
  python3 -c "import h5py, hashlib; f = h5py.File('/tmp/h_$r.h5'); print('$r', hashlib.sha1(f['counts'][:].tobytes()).hexdigest(), int(f['underflow'][()]), int(f['overflow'][()]))" \
    >> "$out/hist_counts.txt"
done
python3 - "$out" <<'PY'
import json, sys, glob
out = sys.argv[1]
wall = {}
for line in open(f"{out}/hist_wall.txt"):
    r, rep, t = line.split()
    wall.setdefault(int(r), []).append(float(t))
comp = {}
for f in glob.glob(f"{out}/hist_*_*.json"):
    j = json.load(open(f))
    comp.setdefault(j["ranks"], []).append((j["compute_s"], j["total_s"]))
    comp_pairs = j["pairs"]
print("ranks  wall_s(best)  total_s(best)  compute_s(best)  eff_total  eff_compute  pairs/s(compute)")
w1 = min(wall[1]); t1 = min(c[1] for c in comp[1]); c1 = min(c[0] for c in comp[1])
for r in sorted(comp):
    w = min(wall[r]); t = min(c[1] for c in comp[r]); c = min(c[0] for c in comp[r])
    print(f"{r:5d} {w:13.3f} {t:14.3f} {c:16.3f} {t1/(r*t):10.3f} {c1/(r*c):12.3f} {int(comp_pairs)/c:14.3g}")
print("set-up phases of the fastest run per rank count (rank 0, s):")
for r in sorted(comp):
    best = min((json.load(open(f)) for f in glob.glob(f"{out}/hist_{r}_*.json")), key=lambda j: j["total_s"])
    phases = best.get("setup_s", {})
    print(f"{r:5d}  total {sum(phases.values()):.2f}: " + ", ".join(f"{k} {v:.2f}" for k, v in phases.items() if v >= 0.05))
print("counts identical across rank counts:", len({l.split(None, 1)[1] for l in open(f'{out}/hist_counts.txt')}) == 1)
PY
cat "$out/hist_counts.txt"
[ -n "${OUT:-}" ] && tar -C "$out" -czf "$OUT/scaling.tgz" .
exit 0

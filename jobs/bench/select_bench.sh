#!/usr/bin/env bash
# Selections end to end (collide, knn --radius) against hist on the same
# points: how fast the pairs that pass a test come out of the backend, next
# to how fast the same backend bins every pair (no pair leaves it). One line
# each: pairs tested, pairs found, seconds (whole run, and compute alone),
# pairs tested a second; a CSV row each in $OUT/select.csv (or ./select.csv).
#
#   jobs/bench/select_bench.sh BIN [LABEL]
#   BACKEND=cuda|cpu (default cuda), N_COLLIDE (300000), N_KNN (1000000),
#   NEIGHBOURS (30: --radius gives about this many a point, uniform in the
#   unit cube), REPEAT (2: the best run counts), MPIRUN (a launcher prefix,
#   e.g. "bash .devrun/on-device.sh"), SKIP ("collide knn hist": leave out).
# The GPU machine: see jobs/device/core-v2-gpu.sh; this machine's CPU:
#   BACKEND=cpu N_COLLIDE=30000 N_KNN=30000 jobs/bench/select_bench.sh build/tdsolve
set -euo pipefail
bin=$1
label=${2:-$(basename "$bin")}
backend=${BACKEND:-cuda}
nc=${N_COLLIDE:-300000}
nk=${N_KNN:-1000000}
neighbours=${NEIGHBOURS:-30}
repeat=${REPEAT:-2}
skip=${SKIP:-}
launch=${MPIRUN:-}
csv=${OUT:-.}/select.csv
# A Python that has h5py (Debian's, where a pyenv one comes first on PATH).
py=python3
python3 -c "import h5py" 2>/dev/null || py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# R with n (4/3) pi R^3 = neighbours: the expected count inside the cube.
radius=$(python3 -c "import math; print(f'{(3 * $neighbours / (4 * math.pi * $nk)) ** (1 / 3):.6g}')")
[ -f "$csv" ] || echo "label,backend,command,n,pairs,found,total_s,compute_s,pairs_per_s,compute_pairs_per_s" >"$csv"

one() {  # one NAME N ARGS...: the best of REPEAT runs
  local name=$1 n=$2
  shift 2
  local best=""
  for ((r = 0; r < repeat; r++)); do
    rm -f "$work/out.h5" "$work/stats.json"
    $launch "$bin" "$@" --backend "$backend" --output "$work/out.h5" --overwrite --progress none --quiet \
      --stats "$work/stats.json"
    local line
    line=$($py - "$work/stats.json" "$work/out.h5" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
found = ""
try:
    import h5py
    with h5py.File(sys.argv[2], "r") as f:
        found = f["pairs"].shape[0] if "pairs" in f else ""
except ImportError:
    pass
print(f"{s['pairs']} {found or 0} {s['total_s']:.4f} {s['compute_s']:.4f}")
PY
)
    read -r pairs found total compute <<<"$line"
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $total < ${best##* } else 1)"; then
      best="$pairs $found $compute $total"
    fi
  done
  read -r pairs found compute total <<<"$best"
  python3 - "$label" "$backend" "$name" "$n" "$pairs" "$found" "$total" "$compute" "$csv" <<'PY'
import sys
label, backend, name, n, pairs, found, total, compute, csv = sys.argv[1:]
p, t, c = int(pairs), float(total), float(compute)
print(f"{label:>10} {backend:>4} {name:<22} n={int(n):>8} {p:.3e} pairs, {int(found):>10} found: "
      f"{t:8.3f} s ({p / t:.3e} pairs/s), compute {c:8.3f} s ({p / c:.3e} pairs/s)")
with open(csv, "a") as f:
    f.write(f"{label},{backend},{name},{n},{p},{found},{t:.4f},{c:.4f},{p / t:.4g},{p / c:.4g}\n")
PY
}

case " $skip " in *" collide "*) ;; *)
  one collide "$nc" collide --generate "spheres:$nc:3:7" ;;
esac
case " $skip " in *" knn "*) ;; *)
  one "knn-radius-$radius" "$nk" knn --generate "uniform:$nk:3:7" --radius "$radius" ;;
esac
case " $skip " in *" hist "*) ;; *)
  one hist-collide-points "$nc" hist --generate "uniform:$nc:3:7" --bins 100 --range 0:1.75 --precision float64
  one hist-knn-points "$nk" hist --generate "uniform:$nk:3:7" --bins 100 --range 0:1.75 ;;
esac

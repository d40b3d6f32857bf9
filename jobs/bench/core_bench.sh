#!/usr/bin/env bash
# GPU benchmark of the execution core, one device call (needs .devbin and
# .devrun from jobs/device/stage.sh). On the same device, in one run:
#   1. edm kernels alone (n = 1e5, λ2 and bb), against the write ceiling,
#      to see that the redesign kept their speed;
#   2. hist: the kernel alone and the whole command at n = 1e6 (5e11 pairs),
#      float32 d = 3, without and with a periodic box; float64 once;
#   3. cross: the kernel alone at M = K = 1e5, d = 3, against the write
#      ceiling, and torch.cdist of the same shape;
#   4. the whole edm command writing the 20 GB file (a sync before every
#      done flag), against dd oflag=direct.
# Logs to $OUT/core_bench.tgz; prints a summary last. HIST_N, CROSS_N, EDM_N
# shrink it for a quick try; SKIP_E2E=1 leaves out step 4.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=/tmp/tdsolve-core-bench
rm -rf "$out" && mkdir -p "$out"
run() { timeout 400 bash .devrun/on-device.sh "$@"; }
T=.devbin/tdsolve
HIST_N=${HIST_N:-1000000}
CROSS_N=${CROSS_N:-100000}
EDM_N=${EDM_N:-100000}
tmp=${TMPDIR:-/tmp}/tdsolve-core-bench
mkdir -p "$tmp"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
date -u +%FT%TZ | tee -a "$out/gpu.txt"

echo "== edm kernels (n=$EDM_N)"
for d in 3 4 8; do
  for map in lambda bb; do
    run $T bench --backend cuda --generate uniform:$EDM_N:$d:1 --map $map --repeat 5 --csv "$out/kernels.csv" \
      | tee -a "$out/kernels.log"
  done
done

echo "== hist kernel (n=$HIST_N)"
for extra in "" "--box 1,1,1"; do
  for v in 0 1; do
    TDSOLVE_HIST_EXACT_ALWAYS=$v run $T bench --backend cuda --generate uniform:$HIST_N:3:7 --bins 200 \
      --range 0:1.8 $extra --repeat 3 --csv "$out/hist.csv" | sed "s/^/exact_always=$v /" | tee -a "$out/hist.log"
  done
done
for c in 1 2 4; do  # shared-memory histogram copies per block (default: 8, one a warp)
  TDSOLVE_HIST_COPIES=$c run $T bench --backend cuda --generate uniform:$HIST_N:3:7 --bins 200 \
    --range 0:1.8 --repeat 3 --csv "$out/hist.csv" | sed "s/^/copies=$c /" | tee -a "$out/hist.log"
done
run $T bench --backend cuda --generate uniform:$HIST_N:3:7 --bins 200 --range 0:1.8 --precision float64 \
  --repeat 1 --csv "$out/hist.csv" | tee -a "$out/hist.log"
run $T bench --backend cuda --generate uniform:$HIST_N:3:7 --bins 4000 --range 0:1.8 --repeat 1 \
  --csv "$out/hist.csv" | tee -a "$out/hist.log"
echo "== hist command (n=$HIST_N)"
/usr/bin/time -f "wall %e s" bash .devrun/on-device.sh $T hist --backend cuda --generate uniform:$HIST_N:3:7 \
  --bins 200 --range 0:1.8 --output "$tmp/h.h5" --overwrite --progress log --stats "$out/hist_e2e.json" \
  2>&1 | tee "$out/hist_e2e.log"

echo "== cross kernel (M=K=$CROSS_N) and torch.cdist"
run $T bench --backend cuda --generate uniform:$CROSS_N:3:1 --with-generate uniform:$CROSS_N:3:2 --repeat 5 \
  --csv "$out/cross.csv" | tee -a "$out/cross.log"
python3 -c "import numpy as np; np.save('$tmp/x.npy', np.random.default_rng(3).random(($CROSS_N, 3)))"
timeout 300 python3 jobs/bench/torch_baseline.py "$tmp/x.npy" --skip-pdist --repeat 5 --header | tee "$out/torch.csv"

if [ -z "${SKIP_E2E:-}" ]; then
echo "== edm command, n=$EDM_N float32 (sync before every flag) vs dd"
rm -f "$tmp/e2e.h5"; sync
t0=$(date +%s.%N)
run $T edm --backend cuda --generate uniform:$EDM_N:3:1 --output "$tmp/e2e.h5" --progress log \
  --stats "$out/edm_e2e.json" 2>&1 | tee "$out/edm_e2e.log"
t1=$(date +%s.%N); sync; t2=$(date +%s.%N)
bytes=$(stat -c %s "$tmp/e2e.h5")
python3 -c "import sys; b,a,m,z=map(float,sys.argv[1:]); print(f'edm file {b/1e9:.2f} GB: {m-a:.2f} s, +final sync {z-a:.2f} s -> {b/(z-a)/1e9:.2f} GB/s')" \
  "$bytes" "$t0" "$t1" "$t2" | tee -a "$out/edm_e2e.log"
rm -f "$tmp/e2e.h5"; sync
count=$(( (bytes + (64 << 20) - 1) / (64 << 20) ))
dd if=/dev/zero of="$tmp/dd.bin" bs=64M count=$count oflag=direct 2>&1 | tail -1 | tee -a "$out/edm_e2e.log"
rm -f "$tmp/dd.bin"
fi

echo "== summary"
cat "$out/gpu.txt"
grep -h "bench:" "$out"/kernels.log | sed 's/^bench: //' | cut -c1-220
grep -h "bench:" "$out"/hist.log | cut -c1-240
grep -h "binned\|wall" "$out/hist_e2e.log"
grep -h "bench:" "$out"/cross.log | cut -c1-260
cat "$out/torch.csv"
grep -h "wrote\|GB/s" "$out/edm_e2e.log" | tail -3
[ -n "${OUT:-}" ] && tar -C "$out" -czf "$OUT/core_bench.tgz" .
exit 0

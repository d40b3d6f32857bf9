#!/usr/bin/env bash
# GPU benchmark, one device call (needs .devbin and .devrun from
# jobs/device/stage.sh). Measures, on the same points:
#   1. the write ceiling: cudaMemset and a plain 16-byte store kernel over
#      the bytes of the packed output (tdsolve bench prints both);
#   2. tdsolve's kernels alone, n = 1e5, d in {1,3,4,8,32,128}, float32 and
#      float64, λ2 grid vs the bounding box (--map bb);
#   3. λ2 vs bb across n (10240 .. 100000), d = 3 and 4;
#   4. torch.cdist and torch.pdist (same .npy points, CUDA events);
#   5. end to end: tdsolve edm writing the 20 GB HDF5 file (n = 1e5, float32)
#      to local disk, with and without the final sync, next to dd oflag=direct
#      of the same size;
#   6. ncu's view of one kernel (memory throughput), for the write-up.
# Writes CSV/JSON/logs to $OUT and prints a summary table last.
set -uo pipefail
cd "$(dirname "$0")/../.."
# Results go to a work folder, packed into $OUT/bench.tgz at the end (the
# device tool returns at most 8 files).
out=/tmp/tdsolve-bench-out
rm -rf "$out" && mkdir -p "$out"
run() { timeout 300 bash .devrun/on-device.sh "$@"; }
T=.devbin/tdsolve
N=${N:-100000}
DS=${DS:-"1 3 4 8 32 128"}
tmp=${TMPDIR:-/tmp}/tdsolve-bench
mkdir -p "$tmp"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
date -u +%FT%TZ | tee -a "$out/gpu.txt"

echo "== points"
python3 - "$tmp" "$N" $DS <<'PY'
import sys, numpy as np
tmp, n, ds = sys.argv[1], int(sys.argv[2]), [int(d) for d in sys.argv[3:]]
rng = np.random.default_rng(2026)
for d in sorted(set(ds) | {3, 4}):
    np.save(f"{tmp}/pts_{n}_{d}.npy", rng.random((n, d)))
for m in [10240, 30720, 51200]:
    for d in [3, 4]:
        np.save(f"{tmp}/pts_{m}_{d}.npy", rng.random((m, d)))
PY

echo "== kernels (n=$N)"
for d in $DS; do
  for p in float32 float64; do
    for map in lambda bb; do
      run $T bench --backend cuda --input "$tmp/pts_${N}_${d}.npy" --precision $p --map $map --repeat 5 \
        --csv "$out/kernels.csv" | tee -a "$out/kernels.log"
    done
  done
done
echo "== map gain across n (d = 3, 4; float32)"
for n in 10240 30720 51200 $N; do
  for d in 3 4; do
    for map in lambda bb; do
      run $T bench --backend cuda --input "$tmp/pts_${n}_${d}.npy" --map $map --repeat 7 \
        --csv "$out/maps.csv" | tee -a "$out/maps.log"
    done
  done
done
echo "== torch"
first=--header
for d in $DS; do
  timeout 300 python3 jobs/bench/torch_baseline.py "$tmp/pts_${N}_${d}.npy" --precision float32 $first \
    | tee -a "$out/torch.csv"
  first=
done
timeout 300 python3 jobs/bench/torch_baseline.py "$tmp/pts_${N}_3.npy" --precision float64 | tee -a "$out/torch.csv"

echo "== end to end: 20 GB HDF5 file vs dd"
rm -f "$tmp/e2e.h5" "$tmp/dd.bin"; sync
t0=$(date +%s.%N)
run $T edm --backend cuda --input "$tmp/pts_${N}_3.npy" --output "$tmp/e2e.h5" --progress log \
  --stats "$out/e2e.json" 2>&1 | tee "$out/e2e.log"
t1=$(date +%s.%N); sync; t2=$(date +%s.%N)
bytes=$(stat -c %s "$tmp/e2e.h5")
python3 -c "import sys; b,a,m,z=map(float,sys.argv[1:]); print(f'e2e file {b/1e9:.2f} GB: tdsolve {m-a:.2f} s, +sync {z-a:.2f} s -> {b/(z-a)/1e9:.2f} GB/s on disk')" \
  "$bytes" "$t0" "$t1" "$t2" | tee -a "$out/e2e.log"
run bash -c "h5ls -r $tmp/e2e.h5" | tee -a "$out/e2e.log"
run $T info "$tmp/e2e.h5" | tee -a "$out/e2e.log"
rm -f "$tmp/e2e.h5"; sync
count=$(( (bytes + (64 << 20) - 1) / (64 << 20) ))
dd if=/dev/zero of="$tmp/dd.bin" bs=64M count=$count oflag=direct 2>&1 | tee -a "$out/e2e.log"
rm -f "$tmp/dd.bin"

echo "== ncu (one kernel, d = 4, float32)"
if command -v ncu >/dev/null; then
  timeout 240 bash .devrun/on-device.sh ncu --clock-control none --section SpeedOfLight \
    --section MemoryWorkloadAnalysis -k regex:edm_lambda --launch-count 1 \
    $T bench --backend cuda --input "$tmp/pts_${N}_4.npy" --repeat 1 > "$out/ncu.txt" 2>&1
  grep -E "Memory Throughput|DRAM Throughput|Duration|L2 Cache Throughput|Compute \(SM\)|Mem Busy|Max Bandwidth" \
    "$out/ncu.txt" | head -20
fi

echo "== summary"
python3 - "$out" <<'PY'
import csv, sys, os
out = sys.argv[1]
rows = list(csv.DictReader(open(f"{out}/kernels.csv")))
print(f"{'d':>4} {'prec':>8} {'map':>7} {'ms':>9} {'Gpairs/s':>9} {'GB/s':>8} {'%memset':>8} {'%store':>7}")
for r in rows:
    store = float(r['store_ms']) / float(r['median_ms']) * 100 if float(r['store_ms']) else 0
    print(f"{r['d']:>4} {r['precision']:>8} {r['map']:>7} {float(r['median_ms']):9.3f} "
          f"{float(r['pairs_per_s'])/1e9:9.1f} {float(r['gbytes_per_s']):8.0f} "
          f"{float(r['fraction_of_memset'])*100:8.1f} {store:7.1f}")
maps = list(csv.DictReader(open(f"{out}/maps.csv")))
print("\nλ2 vs bb (float32): n d  lambda_ms bb_ms  I=bb/lambda")
by = {}
for r in maps:
    by.setdefault((int(r['n']), int(r['d'])), {})[r['map']] = float(r['median_ms'])
for (n, d), v in sorted(by.items()):
    if 'lambda' in v and 'bb' in v:
        print(f"  {n:7d} {d:2d} {v['lambda']:9.3f} {v['bb']:9.3f} {v['bb']/v['lambda']:6.3f}")
PY
[ -n "${OUT:-}" ] && tar -C "$out" -czf "$OUT/bench.tgz" .

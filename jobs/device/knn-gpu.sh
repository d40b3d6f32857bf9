#!/usr/bin/env bash
# On the GPU machine, one call: `tdsolve knn` checks and benchmark (issue 15).
# Needs .devbin and .devrun from jobs/device/stage.sh.
#   1. checks: test_gpu.py's knn tests (cuda vs cpu bytes, 1 and 2-3 ranks,
#      every metric, scikit-learn at n = 20000) and the metric tests' GPU
#      part under TDSOLVE_REQUIRE_GPU=1; compute-sanitizer memcheck and
#      racecheck of the knn kernel;
#   2. n = 10^6 points, K = 16, d = 3 and 32, float32: the whole command
#      (file written; --stats gives the kernel time) next to the PyTorch
#      baseline (jobs/bench/knn_torch.py: cdist slabs + topk) and FAISS's
#      GPU brute force when importable.
# Logs to $OUT/knn.tgz; the summary table last. SKIP_CHECKS=1: benchmarks
# only; SKIP_METRICS=1: not the metric tests; SIZES="1000000": the n to time;
# DIMS="3 32".
set -uo pipefail
cd "$(dirname "$0")/../.."
out=/tmp/tdsolve-knn
rm -rf "$out" && mkdir -p "$out"
command -v compute-sanitizer >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
run() { timeout "${LIMIT:-300}" bash .devrun/on-device.sh "$@"; }
T=$PWD/.devbin/tdsolve
tmp=${TMPDIR:-/tmp}/tdsolve-knn-work
rm -rf "$tmp" && mkdir -p "$tmp"
summary=$out/summary.txt
step() {  # step NAME COMMAND...: run, log, record the exit status and time
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  printf '%-34s rc=%-3d %4ds\n' "$name" "$rc" $((SECONDS - t0)) | tee -a "$summary"
  [ $rc -eq 0 ] || tail -n 30 "$out/$name.log"
}
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"
date -u +%FT%TZ | tee -a "$out/gpu.txt"

echo "== 1. checks"
export TDSOLVE_REQUIRE_GPU=1 TDSOLVE_BIN=$T TDSOLVE_MPIEXEC=mpirun
if [ -z "${SKIP_CHECKS:-}" ]; then
  step e2e_gpu_knn run python3 tests/e2e/test_gpu.py -v ${GPU_TESTS:-GpuTest}
  [ -f tests/e2e/test_metrics_gpu.py ] && [ -z "${SKIP_METRICS:-}" ] && step e2e_metrics_gpu run python3 tests/e2e/test_metrics_gpu.py -v ${METRIC_TESTS:-}
  for tool in memcheck racecheck; do
    for prec in float32 float64; do
      step "${tool}_knn_$prec" run compute-sanitizer --tool $tool --error-exitcode 9 $T knn --backend cuda \
        --generate uniform:700:70:1 --k 20 --precision $prec --output "$tmp/san_${tool}_$prec.h5" --overwrite \
        --progress none --quiet
    done
  done
  grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$out"/*check*.log | sort | uniq -c | tee -a "$summary"
fi

echo "== 2. n = 10^6, K = 16"
echo "impl,n,d,k,precision,slab,slabs,sampled,seconds,seconds_total,distances_per_s" > "$out/torch.csv"
for n in ${SIZES:-1000000}; do
  for d in ${DIMS:-3 32}; do
    python3 -c "import numpy as np; np.save('$tmp/x${n}_$d.npy', np.random.default_rng($d).random(($n, $d), dtype=np.float32))"
    /usr/bin/time -f "%e s wall" -o "$out/knn_${n}_$d.time" bash .devrun/on-device.sh \
      $T knn --backend cuda --input "$tmp/x${n}_$d.npy" --k 16 --output "$tmp/k${n}_$d.h5" --overwrite \
      --progress log --stats "$out/knn_${n}_$d.json" > "$out/knn_${n}_$d.log" 2>&1
    cat "$out/knn_${n}_$d.log" "$out/knn_${n}_$d.time" "$out/knn_${n}_$d.json"
    timeout 400 python3 jobs/bench/knn_torch.py "$tmp/x${n}_$d.npy" --k 16 --sample ${SAMPLE:-40} --faiss \
      | tee -a "$out/torch.csv"
    # The baseline's neighbours of a few rows against tdsolve's.
    python3 - "$tmp/x${n}_$d.npy" "$tmp/k${n}_$d.h5" <<'PY' | tee -a "$out/agree.txt"
import sys, h5py, numpy as np, torch
x = torch.from_numpy(np.load(sys.argv[1])).cuda()
f = h5py.File(sys.argv[2], "r")
rows = np.random.default_rng(0).choice(x.shape[0], 200, replace=False)
d = torch.cdist(x[rows].double(), x.double())
d[torch.arange(len(rows)), torch.from_numpy(rows).cuda()] = float("inf")
v, i = torch.topk(d, 16, largest=False)
same = (i.cpu().numpy() == f["indices"][np.sort(rows)][np.argsort(np.argsort(rows))]).mean()
err = np.abs(v.cpu().numpy() - f["distances"][np.sort(rows)][np.argsort(np.argsort(rows))]).max()
print(f"{sys.argv[1]}: 200 rows vs float64 torch: indices equal {same:.4f}, max |distance diff| {err:.2e}")
PY
  done
done

echo "== summary"
cat "$summary"
python3 - "$out" <<'PY' | tee -a "$summary"
import csv, glob, json, os, sys
out = sys.argv[1]
torch_rows = {(r["n"], r["d"]): r for r in csv.DictReader(open(f"{out}/torch.csv")) if r["impl"] == "torch"}
faiss_rows = {(r["n"], r["d"]): r for r in csv.DictReader(open(f"{out}/torch.csv")) if r["impl"] == "faiss" and r["seconds"]}
print(f"{'n':>8} {'d':>3} {'tdsolve kernel s':>16} {'tdsolve total s':>15} {'torch s':>8} {'faiss s':>8} {'torch/tdsolve':>13}")
for js in sorted(glob.glob(f"{out}/knn_*.json")):
    s = json.load(open(js))
    key = (str(s["n"]), str(s["d"]))
    t = torch_rows.get(key)
    fz = faiss_rows.get(key)
    ts = float(t["seconds_total"]) if t else float("nan")
    print(f"{s['n']:>8} {s['d']:>3} {s['compute_s']:16.3f} {s['total_s']:15.3f} {ts:8.2f} "
          f"{float(fz['seconds']) if fz else float('nan'):8.2f} {ts / s['total_s']:13.1f}")
PY
[ -n "${OUT:-}" ] && tar -C "$out" -czf "$OUT/knn.tgz" .
exit 0

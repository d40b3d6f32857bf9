#!/usr/bin/env bash
# On the GPU machine, one call: the triplet command's GPU checks and its
# benchmark (issue 12). Needs .devbin and .devrun from jobs/device/stage.sh.
#   1. checks: tests/e2e/test_triplet.py's GPU tests (cuda vs cpu, 1 vs 2
#      ranks, λ3 vs BB-3D, stored triplet energies) under TDSOLVE_REQUIRE_GPU=1;
#      compute-sanitizer memcheck and racecheck on small runs of each kernel;
#   2. the dummy kernel (tiles only): λ3 vs BB-3D;
#   3. the ATM kernel (energy and forces): triplets/s for n = 2000, 5000,
#      20000, float32 and float64, λ3 and BB-3D (tdsolve bench: kernel time,
#      the driver loop with results kept on the device), and the whole
#      command at n = 20000 (file written);
#   4. naive PyTorch on the same points (jobs/bench/triplet_torch.py);
#   5. with 2 or more GPUs: strong scaling of n = 20000, float32, one rank per GPU.
# Logs to $OUT/triplet.tgz; the summary table last. QUICK=1: small sizes only;
# SKIP_CHECKS=1: benchmarks only; SIZES="20000": the ATM sizes to time.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=/tmp/tdsolve-triplet
rm -rf "$out" && mkdir -p "$out"
command -v compute-sanitizer >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
run() { timeout "${LIMIT:-300}" bash .devrun/on-device.sh "$@"; }
T=$PWD/.devbin/tdsolve
tmp=${TMPDIR:-/tmp}/tdsolve-triplet-work
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
gpus=$(nvidia-smi -L | wc -l)

# Points: uniform in a cube with about one point per unit volume (the same
# file for tdsolve and PyTorch).
for n in 300 2000 5000 20000; do
  python3 -c "import numpy as np; r=np.random.default_rng($n); np.save('$tmp/p$n.npy', r.random(($n,3))*$n**(1/3))"
done

echo "== 1. checks"
export TDSOLVE_REQUIRE_GPU=1 TDSOLVE_BIN=$T TDSOLVE_MPIEXEC=mpirun
if [ -z "${SKIP_CHECKS:-}" ]; then
for ni in 32 16; do  # the kernel's two variants (TDSOLVE_TRIPLET_NI)
  TDSOLVE_TRIPLET_NI=$ni step e2e_triplet_gpu_ni$ni run python3 tests/e2e/test_triplet.py -v \
    ${GPU_TESTS:-TripletGpuTest}
done
for tool in memcheck racecheck; do
  for prec in float32 float64; do
    for map in lambda bb; do
      for ni in 32 16; do
        TDSOLVE_TRIPLET_NI=$ni step "${tool}_atm_${prec}_${map}_ni$ni" run compute-sanitizer --tool $tool \
          --error-exitcode 9 $T bench --problem atm --backend cuda --input "$tmp/p300.npy" --precision $prec \
          --map $map --repeat 1
      done
    done
  done
  step "${tool}_atm_store_cutoff" run compute-sanitizer --tool $tool --error-exitcode 9 \
    $T triplet --backend cuda --input "$tmp/p300.npy" --store-triplets --cutoff 3 --cutoff-triple 2.5 \
    --chunk-mb 1 --output "$tmp/san_$tool.h5" --overwrite --progress none
  step "${tool}_dummy3" run compute-sanitizer --tool $tool --error-exitcode 9 \
    $T bench --problem dummy3 --backend cuda --generate uniform:3000:3:1 --map bb --repeat 1
done
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$out"/*check*.log | sort | uniq -c | tee -a "$summary"
fi

echo "== 2. dummy kernel: λ3 vs BB-3D"
for n in ${DUMMY_SIZES:-20000 50000}; do
  for map in lambda bb; do
    run $T bench --problem dummy3 --backend cuda --generate uniform:$n:3:1 --map $map --repeat 5 \
      --csv "$out/bench.csv" | tee -a "$out/dummy.log"
  done
done

echo "== 3. ATM kernel"
sizes=${SIZES:-2000 5000 20000}
[ -n "${QUICK:-}" ] && sizes="2000 5000"
for n in $sizes; do
  for prec in float32 float64; do
    reps=3
    [ "$n" = 20000 ] && reps=1
    for variant in lambda:32 lambda:16 bb:${NI:-32}; do
      map=${variant%:*} ni=${variant#*:}
      TDSOLVE_TRIPLET_NI=$ni LIMIT=400 run $T bench --problem atm --backend cuda --input "$tmp/p$n.npy" \
        --precision $prec --map $map --repeat $reps --csv "$out/bench.csv" | sed "s/^/ni=$ni /" \
        | tee -a "$out/atm.log"
      echo "$ni" >> "$out/ni.txt"
    done
  done
done
n=20000
[ -n "${QUICK:-}" ] && n=5000
/usr/bin/time -f "%e s wall" -o "$out/command_time.txt" bash .devrun/on-device.sh \
  $T triplet --backend cuda --input "$tmp/p$n.npy" --output "$tmp/t$n.h5" --overwrite --progress log \
  --stats "$out/command_stats.json" > "$out/command.log" 2>&1
cat "$out/command.log" "$out/command_time.txt" "$out/command_stats.json"

echo "== 4. naive PyTorch"
echo "n,precision,slab,slabs,sampled,seconds,seconds_total,triplets_per_s,energy" > "$out/torch.csv"
for n in $sizes; do
  for prec in float32 float64; do
    sample=""
    [ "$n" = 20000 ] && sample="--sample 16"
    timeout 300 python3 jobs/bench/triplet_torch.py "$tmp/p$n.npy" --precision $prec $sample | tee -a "$out/torch.csv"
  done
done
# tdsolve's energy of the same points, float64, for the cross-check of the baseline.
run $T triplet --backend cuda --input "$tmp/p2000.npy" --precision float64 --output "$tmp/t2000.h5" \
  --overwrite --quiet && python3 -c "import h5py; print('tdsolve energy n=2000 float64:', repr(h5py.File('$tmp/t2000.h5')['energy'][()]))" \
  | tee -a "$out/torch.csv"

if [ "$gpus" -ge 2 ] && [ -z "${QUICK:-}" ]; then
  echo "== 5. strong scaling, n=20000 float32, $gpus GPUs"
  for r in 1 $gpus; do
    LIMIT=400 run mpirun -np $r $T triplet --backend cuda --input "$tmp/p20000.npy" --output "$tmp/s$r.h5" \
      --overwrite --progress none --stats "$out/scaling_$r.json" | tee -a "$out/scaling.log"
    cat "$out/scaling_$r.json"
  done
  python3 -c "
import h5py
a, b = h5py.File('$tmp/s1.h5'), h5py.File('$tmp/s$gpus.h5')
same = all(a[k][()].tobytes() == b[k][()].tobytes() for k in ('energy', 'energy_per_point', 'forces'))
print('1 vs $gpus GPUs byte-identical:', same)" | tee -a "$out/scaling.log"
fi

echo "== summary"
cat "$summary"
python3 - "$out/bench.csv" "$out/ni.txt" <<'EOF' | tee -a "$summary"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ni = open(sys.argv[2]).read().split()
atm = [r for r in rows if r['problem'] == 'atm']
print(f"{'problem':8} {'n':>6} {'prec':8} {'map':7} {'NI':>3} {'median ms':>10} {'triplets/s':>11}")
for r in rows:
    v = ni[atm.index(r)] if r in atm else '-'
    print(f"{r['problem']:8} {r['n']:>6} {r['precision']:8} {r['map']:7} {v:>3} {float(r['median_ms']):10.2f} {float(r['pairs_per_s']):11.3g}")
EOF
cat "$out/torch.csv"
[ -n "${OUT:-}" ] && tar -C "$out" -czf "$OUT/triplet.tgz" .
exit 0

#!/usr/bin/env bash
# On the GPU machine, one call: tdsolve fractal's GPU checks and its benchmark
# (issue 16). Needs .devbin and .devrun from jobs/device/stage.sh.
#   1. checks: the GPU unit test of the coarse maps (tensor cores and CUDA
#      cores vs the CPU), tests/e2e/test_fractal.py under TDSOLVE_REQUIRE_GPU=1
#      (cuda vs cpu, tensor cores on/off), compute-sanitizer memcheck and
#      racecheck of every step kernel;
#   2. Sierpinski triangle, time per step (tdsolve fractal --bench): bb and
#      lambda (embedded layout) and nu (compact), nu with and without tensor
#      cores, rho 8, 16, 32, for levels 10 up to the largest that fits; the
#      first level that does not fit, for each layout;
#   3. carpet and Vicsek at one large level each.
# Logs and bench.csv to $OUT/fractal; the summary table last.
# LEVELS="10 12": the triangle's levels (default 10..23); QUICK=1: small ones;
# E2E=0: leave out the e2e file; SKIP_CHECKS=1: benchmarks only; BENCH=0: checks only.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}/fractal
rm -rf "$out" && mkdir -p "$out"
command -v compute-sanitizer >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
run() { timeout "${LIMIT:-300}" bash .devrun/on-device.sh "$@"; }
T=$PWD/.devbin/tdsolve
tmp=${TMPDIR:-/tmp}/tdsolve-fractal-work
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
  step gpu_unit_coarse_maps run .devbin/tdsolve_gpu_tests --gtest_filter='CudaFractal*'
  # Every preset, every strategy and rho, tensor cores on and off: the same
  # /states and /live as the CPU's compact run (independent of the e2e file).
  same() {
    python3 -c "
import h5py, sys
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
ok = all(a[k][()].tobytes() == b[k][()].tobytes() for k in ('states', 'live', 'steps'))
print(sys.argv[2], 'identical' if ok else 'DIFFERENT'); sys.exit(0 if ok else 1)" "$1" "$2"
  }
  identity() {
    for shape in sierpinski-triangle sierpinski-carpet vicsek x-fractal h-fractal cantor-dust; do
      for r in 2 5; do
        [ "$shape" != sierpinski-triangle ] && [ $r = 5 ] && r=3
        base=$tmp/$shape-$r
        run $T fractal --backend cpu --shape $shape --level $r --steps 9 --snapshot-every 4 \
          --init random:0.45:3 --output $base-cpu.h5 --quiet || return 1
        for v in "nu" "nu --tensor-cores" "nu --rho 1" "nu --rho 1 --tensor-cores" "lambda" "bb" "lambda --rho 1" "bb --rho 1"; do
          tag=$(echo "$v" | tr -d ' -')
          run $T fractal --backend cuda --shape $shape --level $r --steps 9 --snapshot-every 4 \
            --init random:0.45:3 --output $base-$tag.h5 --quiet --map $v || return 1
          same $base-cpu.h5 $base-$tag.h5 || return 1
        done
      done
    done
  }
  step cuda_vs_cpu_identity identity
  [ "${E2E:-1}" = 1 ] && step e2e_fractal_gpu run python3 tests/e2e/test_fractal.py -v FractalGpuTest
  for tool in memcheck racecheck; do
    for v in "nu --rho 8" "nu --rho 8 --tensor-cores" "nu --rho 1 --tensor-cores" "lambda --rho 4" "bb --rho 8" "nu --rho 64"; do
      name=$(echo "${tool}_$v" | tr -d ' -')
      step "$name" run compute-sanitizer --tool $tool --error-exitcode 9 $T fractal --backend cuda \
        --shape sierpinski-triangle --level 7 --steps 3 --map $v --bench --repeat 1 --quiet
    done
  done
  grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$out"/*check*.log | sort | uniq -c | tee -a "$summary"
fi

if [ "${BENCH:-1}" = 1 ]; then
echo "== 2. Sierpinski triangle: time per step"
levels=${LEVELS:-$(seq 10 23)}
[ -n "${QUICK:-}" ] && levels="10 12"
bench() {  # bench LEVEL STEPS REPEAT ARGS...
  local r=$1 t=$2 rep=$3; shift 3
  LIMIT=${LIMIT:-300} run $T fractal --backend cuda --shape "${SHAPE:-sierpinski-triangle}" --level "$r" \
    --steps "$t" --bench --repeat "$rep" --quiet --csv "$out/bench.csv" "$@" 2>&1 | tee -a "$out/bench.log"
  return "${PIPESTATUS[0]}"
}
embedded_ok=1
for r in $levels; do
  cells=$(python3 -c "print(3**$r)")
  # About 2e10 cell updates per run, at least 2 steps.
  t=$(python3 -c "print(max(2, min(200, int(2e10 / 3**$r))))")
  rep=3
  [ "$r" -ge 21 ] && rep=1
  nu_ok=0
  for rho in 8 16 32; do
    bench "$r" "$t" "$rep" --map nu --rho $rho && nu_ok=1
    bench "$r" "$t" "$rep" --map nu --rho $rho --tensor-cores
  done
  if [ $embedded_ok = 1 ]; then
    te=$(python3 -c "print(max(2, min(200, int(2e10 / 4**$r))))")
    for rho in 8 16 32; do
      bench "$r" "$te" "$rep" --map bb --rho $rho || embedded_ok=0
      bench "$r" "$te" "$rep" --map lambda --rho $rho
    done
    [ $embedded_ok = 1 ] || echo "embedded layout: level $r does not fit" | tee -a "$summary"
  fi
  if [ $nu_ok = 0 ]; then
    echo "compact layout: level $r does not fit" | tee -a "$summary"
    break
  fi
done

echo "== 3. other shapes"
for spec in "sierpinski-carpet 8" "vicsek 11"; do
  set -- $spec
  for v in "nu --rho 27" "nu --rho 27 --tensor-cores" "nu --rho 9" "bb --rho 27" "lambda --rho 27"; do
    SHAPE=$1 bench "$2" 5 3 --map $v
  done
done

fi

echo "== summary"
cat "$summary"
[ -f "$out/bench.csv" ] || exit 0
python3 - "$out/bench.csv" <<'EOF' | tee -a "$summary"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"{'shape':20} {'r':>3} {'map':7} {'rho':>4} {'tc':>2} {'ms/step':>10} {'cells/s':>9} {'state':>9}")
for r in rows:
    print(f"{r['shape']:20} {r['level']:>3} {r['map']:7} {r['rho']:>4} {r['tensor_cores']:>2} "
          f"{float(r['median_ms_per_step']):10.3f} {float(r['cells_per_s']):9.3g} "
          f"{int(r['state_bytes']) / 2**30:8.2f}G")
EOF

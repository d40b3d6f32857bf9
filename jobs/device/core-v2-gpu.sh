#!/usr/bin/env bash
# On the GPU machine: the checks and timings of core v2 (selection on the
# device, the kernel plan, lanes at d <= 8), in parts that fit one device
# call each; logs, CSVs and a summary to $OUT (or /tmp/core-v2).
#   PARTS="tests"     the GPU unit tests, then tests/e2e/test_gpu.py (and
#                     test_sw.py's GPU class where it exists)
#   PARTS="sanitize"  compute-sanitizer on every kernel family (check-gpu.sh)
#   PARTS="bench"     collide of 300,000 spheres and knn --radius at n = 1e6
#                     (jobs/bench/select_bench.sh), the reference build's at
#                     smaller n; tdsolve bench of edm, d = 1..8 and 16, 32,
#                     n = 1e5, float32, both builds (share of memset)
#   PARTS="compare"   jobs/compare-builds.py --backend cuda, reference build
#                     against this one, in two phases (the binaries need not
#                     be carried together: PHASE=old|new|compare)
# Needs .devrun (../shared/device/bundle-runtime.sh) and .devbin: tdsolve,
# tdsolve_gpu_tests, and tdsolve_ref (the reference build) for bench and
# compare; any of them may come from an earlier call on the same machine.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/core-v2}
mkdir -p "$out"
parts=" ${PARTS:-tests bench} "
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -d '\n')
summary=$out/summary-$gpu.txt
run() { bash .devrun/on-device.sh "$@"; }
step() {  # step NAME SECONDS COMMAND...: run with a time limit, log, record the status
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name-$gpu.log" 2>&1
  local rc=$?
  printf '%-34s rc=%-3d %4ds\n' "$name" "$rc" $((SECONDS - t0)) | tee -a "$summary"
  [ $rc -eq 0 ] || tail -n 30 "$out/$name-$gpu.log"
}
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee -a "$summary"
export TDSOLVE_REQUIRE_GPU=1 TDSOLVE_BIN=$PWD/.devbin/tdsolve TDSOLVE_MPIEXEC=mpirun
if [[ $parts == *" tests "* ]]; then
  step gpu_unit_tests 420 run .devbin/tdsolve_gpu_tests
  step e2e_gpu 600 run python3 tests/e2e/test_gpu.py -v
  [ -f tests/e2e/test_sw.py ] && step e2e_sw_gpu 300 run python3 tests/e2e/test_sw.py -v SwGpuTest
fi
if [[ $parts == *" sanitize "* ]]; then
  step sanitizers 580 env OUT= SANITIZERS_ONLY=1 bash jobs/device/check-gpu.sh
  cp /tmp/tdsolve-check/summary.txt "$out/sanitizers-summary-$gpu.txt" 2>/dev/null
fi
if [[ $parts == *" bench "* ]]; then
  export OUT_CSV=$out
  step select_new 400 env OUT="$out" MPIRUN="bash .devrun/on-device.sh" REPEAT=2 \
    bash jobs/bench/select_bench.sh .devbin/tdsolve "new-$gpu"
  [ -x .devbin/tdsolve_ref ] && step select_ref 300 env OUT="$out" MPIRUN="bash .devrun/on-device.sh" \
    REPEAT=1 N_KNN=${REF_N_KNN:-200000} SKIP=hist bash jobs/bench/select_bench.sh .devbin/tdsolve_ref "ref-$gpu"
  csv=$out/edm-$gpu.csv
  for bin in tdsolve tdsolve_ref; do
    [ -x .devbin/$bin ] || continue
    for d in 1 2 3 4 5 6 7 8 16 32; do
      run .devbin/$bin bench --backend cuda --generate uniform:100000:$d:1 --repeat 7 --csv "$csv.$bin" \
        >>"$out/edm-$gpu.log" 2>&1
    done
  done
  echo "edm rows: $(cat "$csv".* 2>/dev/null | grep -vc '^device')" | tee -a "$summary"
fi
if [[ $parts == *" compare "* ]]; then
  py=python3
  cmp=(jobs/compare-builds.py --backend cuda --mpiexec "bash .devrun/on-device.sh mpirun" --jobs 8
       --out /tmp/compare-gpu ${COMPARE_ARGS:-})
  case ${PHASE:-all} in
    old) step compare_old 580 "$py" "${cmp[@]}" --phase run --bin .devbin/tdsolve_ref --tag old ;;
    new) step compare_new 580 "$py" "${cmp[@]}" --phase run --bin .devbin/tdsolve --tag new ;;
    compare) step compare 300 "$py" "${cmp[@]}" --phase compare --table "$out/compare-$gpu.md" ;;
    all) step compare_all 580 "$py" "${cmp[@]}" --phase all --old .devbin/tdsolve_ref --new .devbin/tdsolve \
      --table "$out/compare-$gpu.md" ;;
  esac
fi
cat "$summary"

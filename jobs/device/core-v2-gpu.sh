#!/usr/bin/env bash
# On the GPU machine: the checks and timings of core v2 (selection on the
# device, the kernel plan, lanes at d <= 8), in parts that fit one device
# call each; logs, CSVs and a summary to $OUT (or /tmp/core-v2).
#   PARTS="unit"      the GPU unit tests (.devbin/tdsolve_gpu_tests)
#   PARTS="e2e"       tests/e2e/test_gpu.py and test_sw.py's GPU class
#   PARTS="sanitize"  compute-sanitizer on every kernel family (check-gpu.sh)
#   PARTS="bench"     collide of 300,000 spheres and knn --radius at n = 1e6
#                     (jobs/bench/select_bench.sh); tdsolve bench of edm,
#                     d = 1..8 and 16, 32, n = 1e5, float32 (share of memset)
#   PARTS="bench-ref" the same with the reference build (.devbin/tdsolve_ref;
#                     knn --radius at n = 2e5: REF_N_KNN; REF_SELECT=0: edm only)
#   PARTS="compare"   jobs/compare-builds.py --backend cuda, reference build
#                     against this one, in two phases (the binaries need not
#                     be carried together: PHASE=old|new|compare)
# Needs .devrun (../shared/device/bundle-runtime.sh) and .devbin: tdsolve,
# tdsolve_gpu_tests, and tdsolve_ref (the reference build) for bench-ref and
# compare; any of them may come from an earlier call on the same machine.
# The binaries travel xz-packed as .devpack/*.tar.xz (each call may carry
# some: together they pass the device tool's 64 MiB); each pack present is
# unpacked into .devbin first.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=/tmp/core-v2
mkdir -p "$out"
parts=" ${PARTS:-tests bench} "
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -d '\n')
summary=$out/summary-$gpu.txt
run() { bash .devrun/on-device.sh "$@"; }
step() {  # step NAME SECONDS COMMAND...: run with a time limit, log, record the status
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  [ "$1" = run ] && { shift; set -- bash .devrun/on-device.sh "$@"; }  # timeout runs no shell function
  timeout "$limit" "$@" >"$out/$name-$gpu.log" 2>&1
  local rc=$?
  printf '%-34s rc=%-3d %4ds\n' "$name" "$rc" $((SECONDS - t0)) | tee -a "$summary"
  [ $rc -eq 0 ] || tail -n 30 "$out/$name-$gpu.log"
}
mkdir -p .devbin
for pack in .devpack/*.tar.xz; do [ -f "$pack" ] && tar -C .devbin -xJf "$pack"; done
ls -la .devbin | tee -a "$summary"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee -a "$summary"
export TDSOLVE_REQUIRE_GPU=1 TDSOLVE_BIN=$PWD/.devbin/tdsolve TDSOLVE_MPIEXEC=mpirun
if [[ $parts == *" unit "* ]]; then
  step gpu_unit_tests 480 run .devbin/tdsolve_gpu_tests
fi
if [[ $parts == *" e2e "* ]]; then
  step e2e_gpu ${E2E_LIMIT:-560} run python3 tests/e2e/test_gpu.py -v
  [ -f tests/e2e/test_sw.py ] && step e2e_sw_gpu 200 run python3 tests/e2e/test_sw.py -v SwGpuTest
fi
if [[ $parts == *" sanitize "* ]]; then
  step sanitizers 580 env OUT= SANITIZERS_ONLY=1 bash jobs/device/check-gpu.sh
  cp /tmp/tdsolve-check/summary.txt "$out/sanitizers-summary-$gpu.txt" 2>/dev/null
fi
edm_bench() {  # edm_bench BIN: tdsolve bench of edm, n = 1e5, float32, λ2 and BB
  for d in 1 2 3 4 5 6 7 8 16 32; do
    for map in lambda bb; do
      run .devbin/$1 bench --backend cuda --generate uniform:100000:$d:1 --repeat 7 --map $map \
        --csv "$out/edm-$gpu-$1.csv" >>"$out/edm-$gpu-$1.log" 2>&1
    done
  done
  grep -h "^bench" "$out/edm-$gpu-$1.log" | tee -a "$summary"
}
if [[ $parts == *" bench "* ]]; then
  step select_new 400 env OUT="$out" MPIRUN="bash .devrun/on-device.sh" REPEAT=2 \
    bash jobs/bench/select_bench.sh .devbin/tdsolve "new-$gpu"
  cat "$out/select_new-$gpu.log" >>"$summary"
  edm_bench tdsolve
fi
if [[ $parts == *" bench-ref "* ]]; then
  [ "${REF_SELECT:-1}" = 1 ] && step select_ref 400 env OUT="$out" MPIRUN="bash .devrun/on-device.sh" REPEAT=1 \
    N_KNN=${REF_N_KNN:-200000} SKIP=hist bash jobs/bench/select_bench.sh .devbin/tdsolve_ref "ref-$gpu"
  cat "$out/select_ref-$gpu.log" >>"$summary" 2>/dev/null
  edm_bench tdsolve_ref
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
if [ -n "${OUT:-}" ]; then
  tag=$(echo $parts | tr ' ' '-')
  tar -C "$out" -czf "$OUT/core-v2-$gpu-$tag.tgz" .
  cp "$summary" "$OUT/"
fi

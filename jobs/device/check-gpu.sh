#!/usr/bin/env bash
# On the GPU machine: every GPU correctness check in one call, logs to $OUT.
#   GPU unit tests (CUDA vs CPU backend, bit for bit; λ2 on the device),
#   end-to-end files (1 and 2 ranks on one GPU) vs the CPU backend, for edm,
#   hist and cross; edm files vs those of a reference build (.devbin/tdsolve_ref,
#   when staged: the redesign must change no output);
#   compute-sanitizer memcheck and racecheck on small cases of every kernel
#   family: stores (strips, lanes, general), histograms, selections.
# Needs .devbin and .devrun from jobs/device/stage.sh. SANITIZERS_ONLY=1 skips
# the unit and end-to-end tests (to split the checks over two device calls).
set -uo pipefail
cd "$(dirname "$0")/../.."
# Logs go to a work folder, packed into $OUT/check.tgz at the end (the device
# tool returns at most 8 files).
out=/tmp/tdsolve-check
rm -rf "$out" && mkdir -p "$out"
command -v compute-sanitizer >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
run() { timeout 300 bash .devrun/on-device.sh "$@"; }
status=0
step() {  # step NAME COMMAND...: run, log, record the exit status
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  printf '%-28s rc=%-3d %4ds\n' "$name" "$rc" $((SECONDS - t0)) | tee -a "$out/summary.txt"
  [ $rc -eq 0 ] || { status=1; tail -n 25 "$out/$name.log"; }
}
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
export TDSOLVE_REQUIRE_GPU=1 TDSOLVE_BIN=$PWD/.devbin/tdsolve TDSOLVE_MPIEXEC=mpirun
if [ -z "${SANITIZERS_ONLY:-}" ]; then
  step gpu_unit_tests run .devbin/tdsolve_gpu_tests
  step e2e_gpu run python3 tests/e2e/test_gpu.py -v
fi
for tool in memcheck racecheck; do
  # d <= 2 in both strip schedules, forced (n past one 1024-float strip
  # column; 512 doubles); the test hook names the schedule.
  for s in strips lanes; do
    step "${tool}_bench_f32_d2_$s" run env TDSOLVE_TEST_STORE_SCHEDULE=$s compute-sanitizer --tool $tool \
      --error-exitcode 9 .devbin/tdsolve bench --backend cuda --generate uniform:1500:2:1 --repeat 1
    step "${tool}_bench_bb_f64_d1_$s" run env TDSOLVE_TEST_STORE_SCHEDULE=$s compute-sanitizer --tool $tool \
      --error-exitcode 9 .devbin/tdsolve bench --backend cuda --generate uniform:1100:1:3 --precision float64 \
      --map bb --repeat 1
    step "${tool}_cross_f32_d1_$s" run env TDSOLVE_TEST_STORE_SCHEDULE=$s compute-sanitizer --tool $tool \
      --error-exitcode 9 .devbin/tdsolve bench --backend cuda --generate uniform:300:1:1 \
      --with-generate uniform:1517:1:2 --repeat 1
  done
  # lanes, the default at d = 3..8 (d = 7, 8: a row's first values from the
  # previous lane, single stores at the warps' edges)
  step "${tool}_bench_f32_d3" run compute-sanitizer --tool $tool --error-exitcode 9 \
    .devbin/tdsolve bench --backend cuda --generate uniform:1500:3:1 --repeat 1
  step "${tool}_bench_f32_d2_cosine_lanes" run env TDSOLVE_TEST_STORE_SCHEDULE=lanes compute-sanitizer --tool $tool \
    --error-exitcode 9 .devbin/tdsolve bench --backend cuda --generate uniform:1300:2:5 --metric cosine --repeat 1
  step "${tool}_bench_f32_d8" run compute-sanitizer --tool $tool --error-exitcode 9 \
    .devbin/tdsolve bench --backend cuda --generate uniform:1500:8:1 --repeat 1
  step "${tool}_bench_bb_f64_d7" run compute-sanitizer --tool $tool --error-exitcode 9 \
    .devbin/tdsolve bench --backend cuda --generate uniform:1100:7:3 --precision float64 --map bb --repeat 1
  step "${tool}_bench_f32_d6_cosine" run compute-sanitizer --tool $tool --error-exitcode 9 \
    .devbin/tdsolve bench --backend cuda --generate uniform:1300:6:5 --metric cosine --repeat 1
  step "${tool}_bench_bb_f64_d17" run compute-sanitizer --tool $tool --error-exitcode 9 \
    .devbin/tdsolve bench --backend cuda --generate uniform:600:17:2 --precision float64 --map bb --repeat 1 \
    --metric cosine
  # the general path: one narrow stage for both passes (d = 16, 16-byte
  # staging loads), wide stages (d = 33: element by element, 2 stages; d = 64)
  for d in 16 33 64; do
    step "${tool}_bench_f32_d$d" run compute-sanitizer --tool $tool --error-exitcode 9 \
      .devbin/tdsolve bench --backend cuda --generate uniform:600:$d:2 --repeat 1
  done
done
for tool in memcheck racecheck; do
  step "${tool}_hist_box_f32" run compute-sanitizer --tool $tool --error-exitcode 9 \
    .devbin/tdsolve bench --backend cuda --generate uniform:900:3:4 --bins 50 --range 0:1 --box 1,1,1 --repeat 1
  step "${tool}_hist_global_f64_d11" run compute-sanitizer --tool $tool --error-exitcode 9 \
    .devbin/tdsolve bench --backend cuda --generate uniform:700:11:4 --bins 9000 --range 0:3 --precision float64 \
    --repeat 1
  step "${tool}_cross_f32_d5" run compute-sanitizer --tool $tool --error-exitcode 9 \
    .devbin/tdsolve bench --backend cuda --generate uniform:300:5:1 --with-generate uniform:517:5:2 --repeat 1
  # Selections: tiles at d <= 8 (λ2 and BB), the general path, the masked
  # path, overlaps in 1-D and 3-D; the last with most pairs passing, so
  # that chunks outgrow their lists and run again.
  step "${tool}_radius_f32_d3" run compute-sanitizer --tool $tool --error-exitcode 9 \
    .devbin/tdsolve knn --backend cuda --generate uniform:2000:3:4 --radius 0.2 --output /tmp/san.h5 --overwrite
  step "${tool}_radius_bb_f64_d17" run compute-sanitizer --tool $tool --error-exitcode 9 \
    .devbin/tdsolve knn --backend cuda --generate uniform:1500:17:4 --radius 1.2 --precision float64 --map bb \
    --output /tmp/san.h5 --overwrite
  step "${tool}_radius_f32_d4_cosine_masked" run env TDSOLVE_TEST_MASKED_ONLY=1 compute-sanitizer --tool $tool \
    --error-exitcode 9 .devbin/tdsolve knn --backend cuda --generate uniform:1300:4:4 --radius 0.05 \
    --metric cosine --output /tmp/san.h5 --overwrite
  step "${tool}_collide_3d" run compute-sanitizer --tool $tool --error-exitcode 9 \
    .devbin/tdsolve collide --backend cuda --generate spheres:3000:3:5 --output /tmp/san.h5 --overwrite
  step "${tool}_collide_1d_grows" run compute-sanitizer --tool $tool --error-exitcode 9 \
    .devbin/tdsolve collide --backend cuda --generate spheres:3000:1:5:0.4 --map bb --output /tmp/san.h5 --overwrite
done
if [ -x .devbin/tdsolve_ref ]; then
  step edm_same_bytes_as_reference run bash jobs/device/compare-reference.sh
fi
step memcheck_edm_pipeline run compute-sanitizer --tool memcheck --error-exitcode 9 \
  .devbin/tdsolve edm --backend cuda --generate uniform:3000:5:3 --chunk-mb 1 --output /tmp/san.h5 --overwrite
for s in strips lanes; do
  step memcheck_edm_pipeline_$s run env TDSOLVE_TEST_STORE_SCHEDULE=$s compute-sanitizer --tool memcheck \
    --error-exitcode 9 .devbin/tdsolve edm --backend cuda --generate uniform:3000:2:3 --chunk-mb 1 \
    --output /tmp/san.h5 --overwrite
done
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$out"/*check*.log | sort | uniq -c | tee -a "$out/summary.txt"
cat "$out/summary.txt"
[ -n "${OUT:-}" ] && tar -C "$out" -czf "$OUT/check.tgz" .
exit $status

#!/usr/bin/env bash
# On the GPU machine, one call: the map laboratory (issue 14).
# Needs .devbin and .devrun from jobs/device/stage.sh.
#   1. the papers' sweep: dummy, edm (1-4 features), collide (1-D, 3-D),
#      n = 1024..30720 step 1024 (their range), B = 16, the issue's maps,
#      each map's coverage checked; CSV lab-<gpu>.csv
#      and again with --map-once (one thread a block evaluates the map);
#      CSV lab-once-<gpu>.csv
#   2. where the float maps break: dummy, every map, n past the papers' range
#      (to 98304), coverage checked; CSV lab-break-<gpu>.csv; and at the sizes
#      where the host finds their first wrong tile: lab-edges-<gpu>.csv
#   3. the shipped edm kernel: λ2 in both tile orders (TDSOLVE_LAMBDA2_ORDER)
#      against BB, n = 1e5 (and 30720, 51200), d = 1..8, 16, 32, float32,
#      next to cudaMemset; CSV edm-<gpu>.csv
#   4. ncu of the shipped kernel at n = 30720 (d = 4 and 32) when ncu exists
#   5. with a second build in .devbin/tdsolve_b: d = 16, 32, 64 on both
#   6. the general path (d > 8): λ2 against BB, n = 51200 and 1e5,
#      d = 9..128 float32 (and d = 1..8 next to them), float64 and hist at
#      d = 16, 32; CSV general-<gpu>.csv, which rows are which in
#      general-which-<gpu>.csv
#   7. the store schedule at d <= 8: the device's choice, lanes forced
#      (STRIP_VARIANTS replaces "default lanes", e.g. with lanes:ROWS) and,
#      at d <= 2, strips forced, λ2 and BB, n = 51200 and
#      1e5 (STRIP_SIZES), d = 1, 2, 3, 4, 6, 8 (STRIP_DIMS) in float32 and
#      1, 4, 8 (STRIP_F64_DIMS) in float64; CSV strips-<gpu>.csv, which
#      rows are which in strips-which-<gpu>.csv
#   8. the writes alone (jobs/bench/write_shapes.cu, .devbin/write_shapes):
#      n = 1e5 (SHAPES_N), median of 7; CSV write-shapes-<gpu>.csv
#   9. the strip kernels alone (jobs/bench/strip_variants.cu,
#      .devbin/strip_variants): n = 1e5, d = 1..8 (TDS_DIMS="lo hi"), the
#      edges at n = 1031 and 5003; rows tagged STRIP_TAG (default the GPU);
#      CSV strip-variants-<gpu>.csv
# The binaries are stage.sh's (a build with -DTDSOLVE_LAB=ON: the laboratory
# and build/bench/'s harnesses). Everything lands in $OUT (or
# /tmp/tdsolve-lab), never in the source tree; the summary last.
# PARTS="1 2 3 4" picks parts (5 to 9 only when named); REPEAT (default 5).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/tdsolve-lab}
mkdir -p "$out"
run() { timeout "${LIMIT:-400}" bash .devrun/on-device.sh "$@"; }
T=$PWD/.devbin/tdsolve
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -o 'H[0-9][0-9]*' | head -1 | tr 'H' 'h')
gpu=${gpu:-gpu}
summary=$out/summary-$gpu.txt
: > "$summary"
step() {  # step NAME COMMAND...: run, log, record the exit status and time
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  printf '%-30s rc=%-3d %4ds\n' "$name" "$rc" $((SECONDS - t0)) | tee -a "$summary"
  [ $rc -eq 0 ] || tail -n 20 "$out/$name.log"
}
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu-$gpu.txt"
date -u +%FT%TZ | tee -a "$out/gpu-$gpu.txt"
R=${REPEAT:-5}
parts=" ${PARTS:-1 2 3 4} "

if [[ $parts == *" 1 "* ]]; then
  csv=$out/lab-$gpu.csv; rm -f "$csv"
  step lab_dummy_$gpu run $T bench --problem dummy --n 1024:30720:1024 --repeat $R --csv "$csv"
  step lab_edm_$gpu run $T bench --problem edm --features 1..4 --n 1024:30720:1024 --repeat $R --csv "$csv"
  step lab_collide_$gpu run $T bench --problem collide --features 1,3 --n 1024:30720:1024 --repeat $R --csv "$csv"
  # the same with the map evaluated once a block (--map-once)
  csv=$out/lab-once-$gpu.csv; rm -f "$csv"
  step lab_once_dummy_$gpu run $T bench --problem dummy --n 1024:30720:1024 --repeat $R --map-once --csv "$csv"
  step lab_once_edm_$gpu run $T bench --problem edm --features 1..4 --n 1024:30720:1024 --repeat $R --map-once --csv "$csv"
  step lab_once_collide_$gpu run $T bench --problem collide --features 1,3 --n 1024:30720:1024 --repeat $R --map-once --csv "$csv"
fi
if [[ $parts == *" 2 "* ]]; then
  csv=$out/lab-break-$gpu.csv; rm -f "$csv"
  step lab_break_$gpu run $T bench --problem dummy --maps all --n 28672:98304:4096 --repeat 3 --csv "$csv"
  # at the sizes where the host scan (test_map_variants) finds each float map's first wrong tile
  step lab_edges_$gpu run $T bench --problem dummy --maps ltm-n,ltm-r,ltm-x,utm,utm-nodiag \
    --n 31248,31264,31265,32848,32864,32865,73696,73712,73713,92672,92688 --repeat 1 --csv "$out/lab-edges-$gpu.csv"
fi
if [[ $parts == *" 3 "* ]]; then
  csv=$out/edm-$gpu.csv; rm -f "$csv"
  for n in ${EDM_SIZES:-30720 51200 100000}; do
    for d in ${EDM_DIMS:-1 2 3 4 8 16 32}; do
      for cfg in "lambda long" "lambda short" "bb -"; do
        set -- $cfg
        TDSOLVE_LAMBDA2_ORDER=$2 run $T bench --backend cuda --generate uniform:$n:$d:1 --map $1 \
          --repeat 7 --csv "$csv" >> "$out/edm_$gpu.log" 2>&1
        # which order a row was timed with (the bench CSV has no such column)
        echo "$n,$d,$1,$2" >> "$out/edm-order-$gpu.csv"
      done
    done
  done
  echo "edm rows: $(($(wc -l < "$csv") - 1))" | tee -a "$summary"
fi
if [[ $parts == *" 5 "* ]] && [ -x .devbin/tdsolve_b ]; then
  # A second build (stage.sh with REF): the general path (d > 8) with
  # TDS_EDM_MIN_BLOCKS_GENERAL=2, against this build, same points.
  csv=$out/edm-general-$gpu.csv; rm -f "$csv"
  for d in ${GENERAL_DIMS:-16 32 64}; do
    for bin in tdsolve tdsolve_b; do
      for map in lambda bb; do
        run .devbin/$bin bench --backend cuda --generate uniform:100000:$d:1 --map $map --repeat 7 \
          --csv "$csv" >> "$out/edm_general_$gpu.log" 2>&1
        echo "$d,$bin,$map" >> "$out/edm-general-which-$gpu.csv"
      done
    done
  done
  echo "general rows: $(($(wc -l < "$csv") - 1))" | tee -a "$summary"
fi
if [[ $parts == *" 4 "* ]] && command -v ncu >/dev/null; then
  m=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,\
sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.sum,launch__registers_per_thread,\
sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_write.sum,dram__bytes_read.sum
  for d in 4 32; do
    step ncu_${gpu}_d$d run ncu --csv --metrics $m -k regex:block_kernel --launch-count 1 \
      $T bench --backend cuda --generate uniform:30720:$d:1 --repeat 1
    cp "$out/ncu_${gpu}_d$d.log" "$out/ncu-$gpu-d$d.csv"
  done
fi
if [[ $parts == *" 6 "* ]]; then
  csv=$out/general-$gpu.csv; which=$out/general-which-$gpu.csv; rm -f "$csv" "$which"
  bench() {  # bench N D PRECISION KIND MAP [ARGS...]: one row
    local n=$1 d=$2 prec=$3 kind=$4 map=$5; shift 5
    run $T bench --backend cuda --generate uniform:$n:$d:1 --precision $prec --map $map --repeat 7 \
      --csv "$csv" "$@" >> "$out/general_$gpu.log" 2>&1
    echo "$n,$d,$prec,$kind,$map,$?" >> "$which"
  }
  for n in ${GENERAL_SIZES:-51200 100000}; do
    for d in ${GENERAL_DIMS:-1 2 3 4 8 9 12 16 17 24 32 48 64 128}; do
      for map in lambda bb; do bench $n $d float32 edm $map; done
    done
  done
  for d in 16 32; do
    for map in lambda bb; do
      bench 51200 $d float64 edm $map
      bench 100000 $d float32 hist $map --bins 1000 --range 0:$d
    done
  done
  echo "general rows: $(($(wc -l < "$csv") - 1)), failed: $(grep -c ',[1-9][0-9]*$' "$which")" | tee -a "$summary"
fi
if [[ $parts == *" 7 "* ]]; then
  csv=$out/strips-$gpu.csv; which=$out/strips-which-$gpu.csv; rm -f "$csv" "$which"
  # SCHEDULE: default (the device's choice), strips[:ROWS] (d <= 2) or
  # lanes[:ROWS] (the test hook TDSOLVE_TEST_STORE_SCHEDULE; kernel_plan.hpp)
  bench() {  # bench SCHEDULE N D PRECISION MAP: one row
    local sched=$1 n=$2 d=$3 prec=$4 map=$5 env=()
    case $sched in
      default) ;;
      strips) env=(TDSOLVE_TEST_STORE_SCHEDULE=strips) ;;
      strips:*) env=(TDSOLVE_TEST_STORE_SCHEDULE=strips TDSOLVE_STRIP_ROWS=${sched#strips:}) ;;
      lanes) env=(TDSOLVE_TEST_STORE_SCHEDULE=lanes) ;;
      lanes:*) env=(TDSOLVE_TEST_STORE_SCHEDULE=lanes TDSOLVE_STRIP_ROWS=${sched#lanes:}) ;;
    esac
    run env "${env[@]}" $T bench --backend cuda --generate uniform:$n:$d:1 --precision $prec --map $map \
      --repeat 7 --csv "$csv" >> "$out/strips_$gpu.log" 2>&1
    echo "$sched,$n,$d,$prec,$map,$?" >> "$which"
  }
  for n in ${STRIP_SIZES:-51200 100000}; do
    for d in ${STRIP_DIMS:-1 2 3 4 6 8}; do
      for map in lambda bb; do
        for sched in ${STRIP_VARIANTS:-default lanes}; do bench $sched $n $d float32 $map; done
        [ "$d" -le 2 ] && bench strips $n $d float32 $map
      done
    done
  done
  for d in ${STRIP_F64_DIMS:-1 4 8}; do
    for map in lambda bb; do
      for sched in ${STRIP_VARIANTS:-default lanes}; do bench $sched 100000 $d float64 $map; done
      [ "$d" -le 2 ] && bench strips 100000 $d float64 $map
    done
  done
  echo "strips rows: $(($(wc -l < "$csv") - 1)), failed: $(grep -c ',[1-9][0-9]*$' "$which")" | tee -a "$summary"
fi
if [[ $parts == *" 8 "* ]]; then
  step write_shapes_$gpu run sh -c ".devbin/write_shapes ${SHAPES_N:-100000} 7 > $out/write-shapes-$gpu.csv"
fi
if [[ $parts == *" 9 "* ]]; then
  # exit 1 when a build's digest differs from the reference's (the CSV says which)
  step strip_variants_$gpu run sh -c \
    ".devbin/strip_variants 100000 ${STRIP_TAG:-$gpu} 1031 5003 > $out/strip-variants-$gpu.csv"
fi
echo "== summary ($gpu)"
cat "$summary"
grep -hs "WRONG" "$out"/lab_*_$gpu.log | head -5
exit 0

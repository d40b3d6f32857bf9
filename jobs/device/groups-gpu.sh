#!/usr/bin/env bash
# On the GPU machine: hist's partial histograms (--types, --exclude-block)
# and typed ATM (issue 30). Logs and a summary to $OUT (or /tmp/groups-gpu).
#   PARTS="tests"  test_groups.py GroupsGpuTest (the CUDA backend writes the
#                  CPU's bytes), and the GPU tests of the hist kernel's other
#                  users: FramesGpuTest, PeriodicGpuTest, CullGpuTest; typed
#                  ATM on the GPU (TripletGpuTest.test_cuda_typed_matches_cpu)
#                  and the rest of TripletGpuTest (the triplet kernel changed)
#   PARTS="bench"  hist of N uniform points in the periodic unit box, rmax =
#                  0.05, 3 types: no types, --types (6 histograms), --types
#                  --pairs A-B, --exclude-block 3; dense and culled; each
#                  run's own time line (set-up and write included), best of 3
# Needs .devrun (../shared/device/bundle-runtime.sh) and .devpack/tdsolve.tar.xz.
set -uo pipefail
cd "$(dirname "$0")/../.."
DEVICE_JOB=groups-gpu
source jobs/device/lib.sh
parts=" ${PARTS:-tests bench} "

if [[ $parts == *" tests "* ]]; then
  step e2e_groups_gpu 400 python3 tests/e2e/test_groups.py -v GroupsGpuTest
  step e2e_frames_gpu 300 python3 tests/e2e/test_trajectory.py -v FramesGpuTest
  step e2e_periodic_gpu 300 python3 tests/e2e/test_periodic.py -v PeriodicGpuTest
  step e2e_cull_gpu 300 python3 tests/e2e/test_cull.py -v CullGpuTest
  step e2e_typed_atm_gpu 300 python3 tests/e2e/test_triplet.py -v TripletGpuTest.test_cuda_typed_matches_cpu
  step e2e_triplet_gpu 500 python3 tests/e2e/test_triplet.py -v TripletGpuTest
fi
if [[ $parts == *" bench "* ]]; then
  work=$(mktemp -d)
  for n in ${BENCH_N:-1000000 10000000}; do
    python3 -c "import numpy as np; np.savetxt('$work/t$n.txt', np.random.default_rng(1).choice(list('ABC'), $n), fmt='%s')"
    for cull in off on; do
      [ "$cull" = off ] && [ "$n" -gt 2000000 ] && continue  # dense 10^7: minutes
      for variant in plain types pairAB exclude; do
        case $variant in
          plain) extra=() ;;
          types) extra=(--types "$work/t$n.txt") ;;
          pairAB) extra=(--types "$work/t$n.txt" --pairs A-B) ;;
          exclude) extra=(--exclude-block 3) ;;
        esac
        best=""
        for rep in 1 2 3; do
          rm -f "$work/h.h5"
          line=$(timeout 300 bash .devrun/on-device.sh "$bin" hist --generate "uniform:$n:3:7" \
            --box 1,1,1 --bins 200 --range 0:0.05 --cull "$cull" \
            "${extra[@]}" --output "$work/h.h5" --progress none 2>&1 | grep -E "binned" | tail -1)
          secs=$(sed -E 's/.* in ([0-9.]+) (s|ms).*/\1 \2/' <<<"$line" | awk '{print ($2=="ms") ? $1/1000 : $1}')
          if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then best=$secs; bestline=$line; fi
        done
        printf 'hist n=%-9s cull=%-3s %-8s best %8ss  %s\n' "$n" "$cull" "$variant" "$best" "$bestline" | tee -a "$summary"
      done
    done
  done
fi

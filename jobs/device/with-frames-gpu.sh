#!/usr/bin/env bash
# On the GPU machine: hist --with (the A-B rectangle) and triplet --frames
# (issue 30). Logs and a summary to $OUT (or /tmp/with-frames-gpu).
#   PARTS="tests"  test_hist_with.py HistWithGpuTest (CUDA = CPU bytes:
#                  float32/float64, small and general d, orthorhombic and
#                  triclinic), test_triplet_frames.py TripletFramesGpuTest
#                  (per-frame energies and means = the CPU's to 1e-9), and
#                  the hist GPU tests the rectangle's kernels sit beside
#                  (GroupsGpuTest, FramesGpuTest)
#   PARTS="bench"  hist --with of A = N uniform points in a periodic cube at
#                  density 0.8442 against B = N/10 of them, r_max 6 sigma,
#                  200 bins, float32: the run's own time line, best of 3;
#                  the same pairs as one set's hist --types A-B for scale
# Needs .devrun (../shared/device/bundle-runtime.sh) and .devpack/tdsolve.tar.xz.
set -uo pipefail
cd "$(dirname "$0")/../.."
DEVICE_JOB=with-frames-gpu
source jobs/device/lib.sh
parts=" ${PARTS:-tests bench} "

if [[ $parts == *" tests "* ]]; then
  step e2e_hist_with_gpu 400 python3 tests/e2e/test_hist_with.py -v HistWithGpuTest
  step e2e_triplet_frames_gpu 300 python3 tests/e2e/test_triplet_frames.py -v TripletFramesGpuTest
  step e2e_groups_gpu 400 python3 tests/e2e/test_groups.py -v GroupsGpuTest
  step e2e_frames_gpu 300 python3 tests/e2e/test_trajectory.py -v FramesGpuTest
fi
if [[ $parts == *" bench "* ]]; then
  work=$(mktemp -d)
  for n in ${BENCH_N:-1000000}; do
    python3 - "$work" "$n" <<'PY'
import sys, numpy as np
work, n = sys.argv[1], int(sys.argv[2])
L = (n / 0.8442) ** (1 / 3)
rng = np.random.default_rng(7)
np.save(f"{work}/a{n}.npy", rng.random((n, 3)) * L)
np.save(f"{work}/b{n}.npy", rng.random((n // 10, 3)) * L)
open(f"{work}/L{n}", "w").write(repr(L))
PY
    L=$(cat "$work/L$n")
    best=""
    for rep in 1 2 3; do
      rm -f "$work/h.h5"
      line=$(timeout 500 bash .devrun/on-device.sh "$bin" hist --input "$work/a$n.npy" --with "$work/b$n.npy" \
        --box "$L,$L,$L" --bins 200 --range 0:6 --backend cuda --output "$work/h.h5" --progress none 2>&1 |
        grep -E "binned" | tail -1)
      secs=$(sed -E 's/.* in ([0-9.]+) (s|ms).*/\1 \2/' <<<"$line" | awk '{print ($2=="ms") ? $1/1000 : $1}')
      [ -n "$secs" ] || { echo "hist --with n=$n: no time line" | tee -a "$summary"; break; }
      if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then best=$secs; bestline=$line; fi
    done
    [ -n "$best" ] && printf 'hist --with A=%s B=%s cuda float32 best %8ss  %s\n' "$n" "$((n / 10))" "$best" \
      "$bestline" | tee -a "$summary"
  done
fi

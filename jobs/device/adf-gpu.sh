#!/usr/bin/env bash
# On the GPU machine: tdsolve adf (issue 30's angle distributions). Logs and
# a summary to $OUT (or /tmp/adf-gpu).
#   PARTS="tests"  test_adf.py AdfGpuTest: the CUDA backend writes the CPU's
#                  bytes (float32, float64, typed triples, no box, centres
#                  beyond a warp's 128 legs); the hist GPU tests whose sink
#                  and frame loop adf now shares (FramesGpuTest, GroupsGpuTest)
#   PARTS="bench"  adf of N points uniform in a periodic cube at a
#                  Lennard-Jones liquid's density 0.8442, cutoff 1.5 σ, 180
#                  bins, float64 and float32, F frames of an HDF5 stack:
#                  each run's own time line (set-up and write included) and
#                  frames/s, best of 3; cpu on the machine's cores beside it
# Needs .devrun (../shared/device/bundle-runtime.sh) and .devpack/tdsolve.tar.xz.
set -uo pipefail
cd "$(dirname "$0")/../.."
DEVICE_JOB=adf-gpu
source jobs/device/lib.sh
parts=" ${PARTS:-tests bench} "

if [[ $parts == *" tests "* ]]; then
  step e2e_adf_gpu 500 python3 tests/e2e/test_adf.py -v AdfGpuTest
  step e2e_frames_gpu 300 python3 tests/e2e/test_trajectory.py -v FramesGpuTest
  step e2e_groups_gpu 400 python3 tests/e2e/test_groups.py -v GroupsGpuTest
fi
if [[ $parts == *" bench "* ]]; then
  work=$(mktemp -d)
  frames=${BENCH_FRAMES:-10}
  for n in ${BENCH_N:-100000 1000000}; do
    python3 - "$work/x$n.h5" "$n" "$frames" <<'EOF'
import sys, h5py, numpy as np
path, n, frames = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
L = (n / 0.8442) ** (1 / 3)
rng = np.random.default_rng(7)
with h5py.File(path, "w") as f:
    d = f.create_dataset("pos", (frames, n, 3), "f8")
    for q in range(frames):
        d[q] = rng.random((n, 3)) * L
    f["pos"].attrs["L"] = L
EOF
    L=$(python3 -c "import h5py; print(repr(float(h5py.File('$work/x$n.h5')['pos'].attrs['L'])))")
    for backend in cuda cpu; do
      for precision in float64 float32; do
        best=""
        for rep in 1 2 3; do
          rm -f "$work/a.h5"
          line=$(timeout 500 bash .devrun/on-device.sh "$bin" adf --input "$work/x$n.h5:/pos" --frames :: \
            --box "$L,$L,$L" --cutoff 1.5 --bins 180 --precision "$precision" --backend "$backend" \
            --output "$work/a.h5" --progress none 2>&1 | grep -E "took" | tail -1)
          secs=$(sed -E 's/.* in ([0-9.]+) (s|ms).*/\1 \2/' <<<"$line" | awk '{print ($2=="ms") ? $1/1000 : $1}')
          [ -n "$secs" ] || { echo "adf n=$n $backend $precision: no time line" | tee -a "$summary"; break; }
          if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then best=$secs; bestline=$line; fi
        done
        [ -n "$best" ] && printf 'adf n=%-8s F=%-3s %-4s %-7s best %8ss  %6.1f frames/s  %s\n' "$n" "$frames" \
          "$backend" "$precision" "$best" "$(awk "BEGIN{print $frames / $best}")" "$bestline" | tee -a "$summary"
      done
    done
  done
fi

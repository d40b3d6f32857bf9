#!/usr/bin/env bash
# On the GPU machine: trajectories and hist --frames (issue 30). Logs and a
# summary to $OUT (or /tmp/frames-gpu).
#   PARTS="tests"  test_trajectory.py FramesGpuTest (hist --frames on the CUDA
#                  backend = the CPU's bytes), PeriodicGpuTest and CullGpuTest
#                  (the shared set-up load_problem/settle_problem changed)
#   PARTS="bench"  jobs/bench/rdf_frames_vs_mdanalysis.py --no-mdanalysis (the
#                  machine has no MDAnalysis) on cuda and on the CPU's cores:
#                  N_SMALL atoms x F_SMALL frames and N_BIG x F_BIG, rmax 12 Å,
#                  and 3 one-frame runs (--frame K) scaled to the frames
# Needs .devrun (../shared/device/bundle-runtime.sh) and .devpack/tdsolve.tar.xz
# (tdsolve, stripped), unpacked into .devbin.
set -uo pipefail
cd "$(dirname "$0")/../.."
DEVICE_JOB=frames-gpu
source jobs/device/lib.sh
parts=" ${PARTS:-tests bench} "

if [[ $parts == *" tests "* ]]; then
  step e2e_frames_gpu 300 python3 tests/e2e/test_trajectory.py -v FramesGpuTest
  step e2e_periodic_gpu 300 python3 tests/e2e/test_periodic.py -v PeriodicGpuTest
  step e2e_cull_gpu 300 python3 tests/e2e/test_cull.py -v CullGpuTest
fi
if [[ $parts == *" bench "* ]]; then
  for spec in "${N_SMALL:-100000}:${F_SMALL:-200}" "${N_BIG:-1000000}:${F_BIG:-20}"; do
    n=${spec%%:*} f=${spec##*:}
    for backend in cuda cpu; do
      [ "$backend" = cpu ] && [ "$n" -gt 200000 ] && continue  # minutes on the CPU
      t0=$SECONDS
      timeout 500 python3 jobs/bench/rdf_frames_vs_mdanalysis.py --no-mdanalysis --tdsolve "$bin" \
        --mpiexec "bash $PWD/.devrun/on-device.sh mpirun --bind-to none" --backend "$backend" --n "$n" --frames "$f" \
        --per-frame-runs 3 --dir "$(mktemp -d)" >"$out/rdf-$backend-$n-$gpu.txt" 2>&1
      echo "rdf_bench $backend n=$n frames=$f rc=$? $((SECONDS - t0))s" | tee -a "$summary"
      cat "$out/rdf-$backend-$n-$gpu.txt"
    done
  done
fi

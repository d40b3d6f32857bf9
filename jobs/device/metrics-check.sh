#!/usr/bin/env bash
# On the GPU machine: the metrics on the CUDA backend (float64 euclidean and
# sqeuclidean = SciPy bits, GPU = CPU bytes for every metric, bool inputs),
# the GPU identity tests and the culled knn --k; logs to $OUT.
# Needs .devrun and .devpack/tdsolve.tar.xz (see cull-gpu.sh).
set -uo pipefail
mkdir -p .devbin && tar -C .devbin -xJf .devpack/tdsolve.tar.xz
export TDSOLVE_REQUIRE_GPU=1 TDSOLVE_BIN=$PWD/.devbin/tdsolve TDSOLVE_MPIEXEC=mpirun
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
python3 --version; python3 -c "import pybind11" 2>&1 | tail -1
for t in "tests/e2e/test_metrics_gpu.py -v" "tests/e2e/test_metrics.py -v -k float64_bits -k bool_input -k continuous" "tests/e2e/test_gpu.py -v -k identical -k hist" "tests/e2e/test_cull.py -v -k neighbours CullGpuTest"; do
  echo "== $t"; timeout 400 bash .devrun/on-device.sh python3 $t > $OUT/log.txt 2>&1; echo "rc=$?"; grep -E "^Ran|^OK|^FAIL|Error|skipped" $OUT/log.txt | head -8; cp $OUT/log.txt "$OUT/$(echo $t | tr ' /' '__' | cut -c1-60).log"
done

#!/usr/bin/env bash
# On the GPU machine: tdsolve's in-process Python calls (issue 31) with the
# extension built for that machine's Python (3.12 there; NumPy 2) and CUDA:
# tests/e2e/test_api_gpu.py (the API's GPU files = the command line's
# --backend cuda bytes for every command, in-memory results = the CPU's, no
# visible GPU, many calls from threads), the CPU API tests that need no
# scikit-learn or install tree (on NumPy 2), and jobs/bench/api_vs_peers.py
# on the GPU next to SciPy, cKDTree and torch (a table in $OUT). Logs and a
# summary to $OUT (or /tmp/api-gpu).
#   STEPS="tests bench"   which parts (default both)
#   BENCH_ARGS="..."      more arguments of api_vs_peers.py (e.g. --cases pdist cdist --n 20000)
# Needs .devrun (../shared/device/bundle-runtime.sh with tdsolve and the
# extension) and .devpack/api.tar.xz* holding tdsolve and python/ (the
# staged package of a build with -DTDSOLVE_PYTHON_EXT=ON for that Python:
# -DPython3_EXECUTABLE=.../python3.12 here). Staged here (2026-11-28) as:
#   cmake -S . -B build-gpu-py312 -DCMAKE_BUILD_TYPE=Release -DTDSOLVE_CUDA=ON -DTDSOLVE_TESTS=OFF \
#     -DTDSOLVE_PYTHON_EXT=ON -DPython3_EXECUTABLE=/root/.pyenv/versions/3.12.1/bin/python3.12
#   cmake --build build-gpu-py312 -j2 --target tdsolve _core tdsolve_python_package
#   mkdir -p P/python && strip -o P/tdsolve build-gpu-py312/tdsolve
#   cp -r build-gpu-py312/python/tdsolve P/python/ && tar -C P -cJf api.tar.xz tdsolve python
#   bash ../shared/device/bundle-runtime.sh .devrun build-gpu-py312/tdsolve build-gpu-py312/python/tdsolve/_core*.so
# and api.tar.xz cut into .devpack/api.tar.xz.part-aa (44 MiB: it travels with .devrun), -ab, -ac (54 MiB
# each at most), one device call each while the machine is warm (158 MB in all: the fatbins do not compress).
set -uo pipefail
cd "$(dirname "$0")/../.."
DEVICE_JOB=api-gpu
source jobs/device/lib.sh
export TDSOLVE_PYTHON_BUILD=$PWD/.devbin/python
steps=${STEPS:-tests bench}
step versions 60 python3 -c "
import sys, numpy, h5py, scipy
sys.path.insert(0, '$TDSOLVE_PYTHON_BUILD')
import tdsolve
from tdsolve import _core
print(sys.version.split()[0], 'numpy', numpy.__version__, 'h5py', h5py.__version__, 'scipy', scipy.__version__,
      'tdsolve', tdsolve.__file__, _core.__file__)"
cat "$out/versions-$gpu.log" | tee -a "$summary"
if [[ " $steps " == *" tests "* ]]; then
  step api_gpu ${STEP_S:-400} python3 tests/e2e/test_api_gpu.py -v
  step api_cpu_numpy2 200 python3 tests/e2e/test_api.py -v -k files_are -k values_are -k any_numpy \
    -k reads_buffers -k threads -k errors_are -k failure_leaves -k fill_an_array -k in_memory_call
fi
if [[ " $steps " == *" bench "* ]]; then
  step api_vs_peers ${BENCH_S:-420} env PYTHONPATH="$TDSOLVE_PYTHON_BUILD" \
    python3 jobs/bench/api_vs_peers.py --device cuda --repeat 3 ${BENCH_ARGS:-}
  grep -E '^\||^#' "$out/api_vs_peers-$gpu.log" | tee "$out/api_vs_peers-$gpu.md"
fi

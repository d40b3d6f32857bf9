#!/usr/bin/env bash
# Sets tdsolve up on a fresh Debian 12 machine and runs a demo job:
#   1. installs the Debian packages it needs (apt-get; sudo unless root),
#   2. builds ./build (with the CUDA backend where a CUDA toolkit and a GPU
#      are both present, TDSOLVE_CUDA=ON|OFF to say otherwise; without the map
#      laboratory, CMake's TDSOLVE_LAB, which is off unless asked for:
#      jobs/run-tests.sh asks),
#   3. computes the distances of 20000 synthetic points in 3-D on 2 MPI ranks
#      (on the GPU if one is visible, else on the CPU) into demo.h5,
#   4. shows what the file holds and reads a value back with the Python
#      reader, then removes demo.h5 (800 MB; TDSOLVE_KEEP_DEMO=1 keeps it).
set -euo pipefail
cd "$(dirname "$0")/.."
source jobs/lib/common.sh
ensure_packages
build_tdsolve
allow_mpirun_as_root
extra=()
[ "$(nproc)" -ge 2 ] || extra=(--oversubscribe)
[ "${TDSOLVE_KEEP_DEMO:-0}" = 1 ] || trap 'rm -f demo.h5 demo.h5.partial' EXIT
mpirun -np 2 "${extra[@]}" build/tdsolve edm --generate uniform:20000:3:42 --output demo.h5 --overwrite
build/tdsolve info demo.h5
/usr/bin/python3 - <<'PY'
import sys
sys.path.insert(0, "io/python")
from tdsolve_h5 import open_result
with open_result("demo.h5") as r:
    print(f"python: distance between points 0 and 1 of {r.n}: {float(r.pair(0, 1)):.6f} ({r.metric}, {r.precision})")
PY
if [ "${TDSOLVE_KEEP_DEMO:-0}" = 1 ]; then
  echo "demo: done (demo.h5 kept); see docs/usage.md for real jobs"
else
  echo "demo: done (demo.h5 removed; TDSOLVE_KEEP_DEMO=1 keeps it); see docs/usage.md for real jobs"
fi

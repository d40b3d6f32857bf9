#!/usr/bin/env bash
# Sets tdsolve up on a fresh Debian 12 machine and runs a demo job:
#   1. installs the Debian packages it needs (apt-get; sudo unless root),
#   2. builds ./build (with the CUDA backend where a CUDA toolkit and a GPU
#      are both present, TDSOLVE_CUDA=ON|OFF to say otherwise; without the
#      tests and the map laboratory, CMake's TDSOLVE_TESTS and TDSOLVE_LAB:
#      jobs/run-tests.sh turns both on in the same ./build),
#   3. installs tdsolve, its Python package (with the in-process calls) and
#      the batch script under TDSOLVE_PREFIX (default ~/.local: Python finds
#      the package there, ~/.local/bin/tdsolve; an environment-modules file
#      in PREFIX/share/tdsolve/modulefiles),
#   4. computes the distances of 20000 synthetic points in 3-D on 2 MPI ranks
#      (on the GPU if one is visible, else on the CPU) into demo.h5,
#   5. shows what the file holds, reads a value back with the Python package
#      and computes the same in process (tdsolve.pdist), then removes demo.h5
#      (800 MB; TDSOLVE_KEEP_DEMO=1 keeps it).
# It ends with the time each step took.
set -euo pipefail
cd "$(dirname "$0")/.."
source jobs/lib/common.sh
t0=$SECONDS
ensure_packages
t_packages=$((SECONDS - t0))
build_tdsolve -DTDSOLVE_TESTS=OFF
prefix=${TDSOLVE_PREFIX:-$HOME/.local}
cmake --install build --prefix "$prefix"
t_build=$((SECONDS - t0 - t_packages))
allow_mpirun_as_root
extra=()
[ "$(nproc)" -ge 2 ] || extra=(--oversubscribe)
[ "${TDSOLVE_KEEP_DEMO:-0}" = 1 ] || trap 'rm -f demo.h5 demo.h5.partial' EXIT
mpirun -np 2 "${extra[@]}" build/tdsolve edm --generate uniform:20000:3:42 --output demo.h5 --overwrite
build/tdsolve info demo.h5
# The installed package, as a user's python3 finds it (~/.local: the user
# site; another TDSOLVE_PREFIX: its module file, or PYTHONPATH).
PYTHONPATH="$prefix/lib/python3.$(/usr/bin/python3 -c 'import sys; print(sys.version_info[1])')/site-packages${PYTHONPATH:+:$PYTHONPATH}" \
/usr/bin/python3 - <<'PY'
import numpy as np
import tdsolve
with tdsolve.open("demo.h5") as r:
    print(f"python: distance between points 0 and 1 of {r.n}: {float(r.pair(0, 1)):.6f} ({r.metric}, {r.precision})")
X = np.random.default_rng(42).random((2000, 3))
d = tdsolve.pdist(X)  # in process, float64: scipy.spatial.distance.pdist(X)
print(f"python: tdsolve.pdist of 2000 points in process: {d.shape[0]} distances, the first {d[0]:.6f}")
PY
echo "setup: packages ${t_packages} s, build and install ${t_build} s," \
  "demo $((SECONDS - t0 - t_packages - t_build)) s: ${SECONDS} s in all"
if [ "${TDSOLVE_KEEP_DEMO:-0}" = 1 ]; then
  echo "demo: done (demo.h5 kept); tdsolve is installed in $prefix; see docs/usage.md for real jobs"
else
  echo "demo: done (demo.h5 removed; TDSOLVE_KEEP_DEMO=1 keeps it); tdsolve is installed in $prefix;"
  echo "      see docs/usage.md for real jobs and python/README.md for the Python package"
fi

#!/usr/bin/env bash
# The whole test suite: installs any missing Debian package, builds ./build
# with the tests and the map laboratory (-DTDSOLVE_TESTS=ON, which the setup
# leaves off; -DTDSOLVE_LAB=ON: its tests run here and, with CUDA, the
# benchmark harnesses compile; a user's build leaves it out), runs every
# test with ctest (GPU tests skip themselves without a GPU; set
# TDSOLVE_REQUIRE_GPU=1 to make them fail instead). Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
source jobs/lib/common.sh
ensure_packages "${TDSOLVE_TEST_PACKAGES[@]}"
build_tdsolve -DTDSOLVE_LAB=ON -DTDSOLVE_TESTS=ON
allow_mpirun_as_root
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"

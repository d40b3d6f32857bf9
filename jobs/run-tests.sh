#!/usr/bin/env bash
# The whole test suite: installs any missing Debian package, builds ./build,
# runs every test with ctest (GPU tests skip themselves without a GPU; set
# TDSOLVE_REQUIRE_GPU=1 to make them fail instead). Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
source jobs/lib/common.sh
ensure_packages "${TDSOLVE_TEST_PACKAGES[@]}"
build_tdsolve
allow_mpirun_as_root
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"

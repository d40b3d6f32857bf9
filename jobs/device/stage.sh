#!/usr/bin/env bash
# Here (the build machine): build for the H100/H200 and stage what the GPU
# machine needs in two git-ignored folders: .devbin (binaries) and .devrun
# (Debian's Open MPI, HDF5 and Boost runtime; see ../shared/device/README.md).
# Then call the device tool with carry [".devrun", ".devbin"] and run
#   bash jobs/device/check-gpu.sh     (tests, sanitizers)
#   bash jobs/bench/gpu_bench.sh      (benchmarks)
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build build-gpu -j"$(nproc)"
rm -rf .devbin && mkdir -p .devbin
cp build-gpu/tdsolve build-gpu/tests/tdsolve_gpu_tests .devbin/
strip --strip-debug .devbin/*
bundle=${TDSOLVE_BUNDLE_SCRIPT:-../shared/device/bundle-runtime.sh}
bash "$bundle" .devrun .devbin/tdsolve .devbin/tdsolve_gpu_tests
grep -qx '/.devbin/' .git/info/exclude 2>/dev/null || echo '/.devbin/' >> .git/info/exclude
grep -qx '/.devrun/' .git/info/exclude 2>/dev/null || echo '/.devrun/' >> .git/info/exclude
du -sh .devbin .devrun

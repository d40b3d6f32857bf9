#!/usr/bin/env bash
# Here (the build machine): build for the H100/H200 and stage what the GPU
# machine needs in two git-ignored folders: .devpack (the binaries, xz-packed:
# unpacked they pass the device tool's 64 MiB limit) and .devrun (Debian's
# Open MPI, HDF5 and Boost runtime; see ../shared/device/README.md). Set REF
# to a reference build of tdsolve to stage it as tdsolve_ref. The build has
# the map laboratory (-DTDSOLVE_LAB=ON: its GPU tests, jobs/device/lab-gpu.sh,
# and the harnesses of jobs/bench as .devbin/strip_variants and
# .devbin/write_shapes). Then call the
# device tool with carry [".devrun", ".devpack"] and run
#   tar -C .devbin -xJf .devpack/devbin.tar.xz    (makes .devbin) then
#   bash jobs/device/check-gpu.sh     (tests, sanitizers)
#   bash jobs/bench/core_bench.sh     (benchmarks; gpu_bench.sh: edm kernels in depth)
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DTDSOLVE_LAB=ON >/dev/null
cmake --build build-gpu -j"$(nproc)"
rm -rf .devbin && mkdir -p .devbin
cp build-gpu/tdsolve build-gpu/tests/tdsolve_gpu_tests build-gpu/bench/strip_variants \
  build-gpu/bench/write_shapes .devbin/
[ -n "${REF:-}" ] && cp "$REF" .devbin/tdsolve_ref
strip .devbin/*
bundle=${TDSOLVE_BUNDLE_SCRIPT:-../shared/device/bundle-runtime.sh}
bash "$bundle" .devrun .devbin/*
rm -rf .devpack && mkdir -p .devpack
tar -C .devbin -cJf .devpack/devbin.tar.xz .
du -sh .devpack .devrun

#!/usr/bin/env bash
# On the GPU machine: the boolean family on values and with weights
# (BoolValues), jensenshannon's inf rows and mahalanobis (issue 31) on the
# CUDA backend — test_metrics_gpu.py's MetricsGpuTest (GPU = CPU bytes, 1
# and 2 ranks: edm, cross, hist, knn; every other metric, the packed boolean
# family, hist) — and the GPU identity tests beside them. Logs and a summary
# to $OUT (or /tmp/values-gpu).
#   TESTS="..."  which MetricsGpuTest tests (default: all four; on an H200 they
#                took 326, 211, 30 and 320 s: give each step STEP_S seconds, and
#                a device call (600 s at most) one or two of them)
# Needs .devrun (../shared/device/bundle-runtime.sh) and .devpack/tdsolve.tar.xz*.
set -uo pipefail
cd "$(dirname "$0")/../.."
DEVICE_JOB=values-gpu
source jobs/device/lib.sh
for t in ${TESTS:-test_boolean_values_weights_and_inf_rows test_boolean test_hist test_continuous_and_weighted}; do
  step "metrics_gpu_$t" ${STEP_S:-560} python3 tests/e2e/test_metrics_gpu.py -v "MetricsGpuTest.$t"
done
[ -n "${IDENTITY-1}" ] && step e2e_gpu_identical 300 python3 tests/e2e/test_gpu.py -v -k identical

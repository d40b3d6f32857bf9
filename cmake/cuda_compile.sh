#!/usr/bin/env bash
# CMake's CUDA compiler launcher (CMakeLists.txt): cuda_compile.sh LOG_DIR
# COMMAND... runs the compile, writes its compiler CPU seconds to
# LOG_DIR/OBJECT.time and keeps ptxas's per-kernel report (-Xptxas -v) in
# LOG_DIR/OBJECT.ptxas instead of on the terminal; everything else the
# compiler says (errors, warnings) goes to stderr as usual.
# cmake/cuda_report.cmake sums the logs up after the CUDA library links.
set -u
log_dir=$1
shift
while [ $# -gt 0 ] && [ -z "$1" ]; do shift; done  # an empty launcher before the compiler
obj=unknown.o
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; i++)); do
  if [ "${args[i]}" = "-o" ]; then obj=${args[i + 1]}; fi
done
mkdir -p "$log_dir"
name=$(basename "$obj")
err=$(mktemp)
"$@" 2>"$err"
rc=$?
# The children's user and system time, e.g. "0m12.345s 0m1.020s" (times
# must run in this shell, not a subshell, to see the compiler).
times >"$err.times"
read -r user sys < <(tail -n 1 "$err.times")
rm -f "$err.times"
seconds=$(awk -v u="$user" -v s="$sys" 'function sec(t,  m) { m = t; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", t); sub(/s$/, "", t); return m * 60 + t } BEGIN { printf "%.2f\n", sec(u) + sec(s) }')
echo "$seconds" >"$log_dir/$name.time"
grep -E '^ptxas info|^    [0-9]+ bytes stack frame' "$err" >"$log_dir/$name.ptxas"
grep -vE '^ptxas info|^    [0-9]+ bytes stack frame' "$err" >&2
rm -f "$err"
exit $rc

# Shared by the jobs/device scripts (source it after `cd` to the repo root):
# $out, $gpu and $summary set, step(), the packs in .devpack unpacked into
# .devbin, and the test environment (TDSOLVE_REQUIRE_GPU=1, TDSOLVE_BIN).
#   step NAME SECONDS COMMAND...  runs COMMAND through .devrun/on-device.sh
#                                 with a time limit, logs to $out/NAME-$gpu.log
#                                 and records its status in $summary.
out=${OUT:-/tmp/${DEVICE_JOB:-device}}
mkdir -p "$out"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -d '\n')
summary=$out/summary-$gpu.txt
step() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" bash .devrun/on-device.sh "$@" >"$out/$name-$gpu.log" 2>&1
  local rc=$?
  printf '%-34s rc=%-3d %4ds\n' "$name" "$rc" $((SECONDS - t0)) | tee -a "$summary"
  [ $rc -eq 0 ] || tail -n 30 "$out/$name-$gpu.log"
}
mkdir -p .devbin
# A pack over a call's 64 MiB carry comes in pieces (split -b 40M P P.part-),
# one call each while the machine is warm: joined here.
for first in .devpack/*.tar.xz.part-aa; do
  [ -f "$first" ] && cat "${first%aa}"* >"${first%.part-aa}"
done
for pack in .devpack/*.tar.xz; do [ -f "$pack" ] && tar -C .devbin -xJf "$pack"; done
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee -a "$summary"
nproc | sed 's/^/cores: /' | tee -a "$summary"
export TDSOLVE_REQUIRE_GPU=1 TDSOLVE_BIN=$PWD/.devbin/tdsolve TDSOLVE_MPIEXEC=mpirun
bin=$PWD/.devbin/tdsolve

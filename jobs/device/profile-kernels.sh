#!/usr/bin/env bash
# On the GPU machine: ncu's view of the EDM kernels at n = 30720 (small enough
# for kernel replay), to explain where time goes: DRAM bytes read vs written
# (a pure-write kernel that reads DRAM is merging partial sectors), issued
# instructions, occupancy, stall reasons; plus the kernels' SASS sizes.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/tdsolve-prof}
mkdir -p "$out"
run() { timeout 200 bash .devrun/on-device.sh "$@"; }
T=.devbin/tdsolve
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum,\
lts__t_sectors_op_read.sum,sm__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,\
smsp__inst_executed.avg.per_cycle_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__occupancy_limit_registers
N=${N:-30720}
for cfg in "float32 1" "float32 3" "float32 4" "float32 8" "float64 1" "float64 3"; do
  set -- $cfg
  run ncu --clock-control none --csv --metrics $metrics -k regex:edm_lambda --launch-count 1 \
    $T bench --backend cuda --generate uniform:$N:$2:1 --precision $1 --repeat 1 > "$out/m_$1_$2.csv" 2>&1
done
TDSOLVE_TEST_MASKED_ONLY=1 run ncu --clock-control none --csv --metrics $metrics -k regex:edm_lambda \
  --launch-count 1 $T bench --backend cuda --generate uniform:$N:4:1 --repeat 1 > "$out/m_masked_4.csv" 2>&1
for cfg in "float32 1" "float32 4" "float64 1"; do
  set -- $cfg
  run ncu --clock-control none --section WarpStateStats --section SchedulerStats -k regex:edm_lambda \
    --launch-count 1 $T bench --backend cuda --generate uniform:$N:$2:1 --precision $1 --repeat 1 \
    > "$out/w_$1_$2.txt" 2>&1
done
cuobjdump --dump-sass .devbin/tdsolve > "$out/all.sass" 2>/dev/null
python3 - "$out" <<'PY'
import csv, glob, io, os, re, sys
out = sys.argv[1]
rows = []
for f in sorted(glob.glob(f"{out}/m_*.csv")):
    text = open(f).read()
    start = text.find('"ID"')
    if start < 0:
        print(os.path.basename(f), "no ncu data:", text[-300:]); continue
    vals = {}
    for r in csv.DictReader(io.StringIO(text[start:])):
        vals[r["Metric Name"]] = (r["Metric Value"], r["Metric Unit"])
    rows.append((os.path.basename(f)[2:-4], vals))
keys = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_op_write.sum",
        "lts__t_sectors_op_read.sum", "sm__inst_executed.sum", "sm__warps_active.avg.pct_of_peak_sustained_active",
        "smsp__inst_executed.avg.per_cycle_active", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed", "launch__registers_per_thread"]
for k in keys:
    print(f"{k[:44]:44s}", " ".join(f"{name:>11s}" for name, _ in rows) if k == keys[0] else "")
    print(f"{'':44s}", " ".join(f"{v.get(k, ('-',''))[0]:>11s}" for _, v in rows), rows[0][1].get(k, ('', ''))[1] if rows else "")
for f in sorted(glob.glob(f"{out}/w_*.txt")):
    print("==", os.path.basename(f))
    for line in open(f):
        if re.search(r"Stall|Warp Cycles|Issued Warp|No Eligible|Active Warps|Eligible Warps|One or More", line):
            print("  ", line.strip()[:110])
sass = open(f"{out}/all.sass").read().split("Function : ")
for name in ["EuclideanIfEELi1E", "EuclideanIfEELi4E", "EuclideanIdEELi1E"]:
    for fn in sass:
        if "edm_lambda_kernel" in fn[:200] and name in fn[:200]:
            ins = re.findall(r"/\*[0-9a-f]{4}\*/\s+([A-Z0-9_.]+)", fn)
            from collections import Counter
            c = Counter(i.split(".")[0] for i in ins)
            print("SASS", name, len(ins), "instructions;", ", ".join(f"{k}:{v}" for k, v in c.most_common(18)))
PY

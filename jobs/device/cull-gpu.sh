#!/usr/bin/env bash
# On the GPU machine: culled cutoff domains (--cull; usage.md "Cutoffs") in
# parts that fit one device call each; logs, CSVs and a summary to $OUT (or
# /tmp/cull-gpu).
#   PARTS="tests"  tests/e2e/test_cull.py (CullGpuTest: culled --backend cuda
#                  runs against dense CPU runs, byte for byte) and the GPU
#                  classes of test_gpu.py that run hist, knn and collide
#   PARTS="big"    tdsolve alone at n = 10^7 (and hist at N_HIST): knn
#                  --radius (~30 neighbours), hist to 1/20 of the unit box
#                  (open and periodic), collide of 10^7 spheres; culled, with
#                  --stats (compute = kernel time and the copies of the pairs)
#   PARTS="dense"  the same queries at n = 10^6 culled and dense (--cull off)
#   PARTS="epi"    CullGpuTest, TripletGpuTest, SwGpuTest; PARTS="gpu": test_gpu.py
#                  (no lab): every epilogue type's GPU files against the CPU's
#   PARTS="trip"   triplet --cull on on the GPU for each TRIP_SIDE (n = side^3;
#                  TRIP_DENSE=1 adds --cull off) (triplet_vs_lammps.py, no LAMMPS)
#   PARTS="periodic" test_periodic.py's PeriodicGpuTest (triclinic cells and
#                  periodic triplets, GPU = CPU) and CullGpuTest; then at n =
#                  N_BIG knn --radius, hist and collide in the unit box, the
#                  orthorhombic and a triclinic (TILT) cell, one after the
#                  other; and triplet_vs_lammps.py --periodic (and --tilt
#                  0.1) for each TRIP_SIDE
#   PARTS="knnk"   knn --k culled on the GPU: CullGpuTest's neighbour tests,
#                  then --k 16 at n = 10^6 and N_BIG (culled, --stats), 10^6
#                  dense, and the dense d = 32 case of docs/performance.md
#                  (n = 2e5) that the kernel's culled variant must not slow
#   PARTS="with"   hist --with culled (two sets): CullGpuTest (its --with
#                  cases), HistWithGpuTest, then at n = N_BIG points in two
#                  halves (A and B), open and periodic, culled and (at 10^6)
#                  dense, beside the one-set hist of the same n
#   PARTS="peers"  jobs/bench/cutoff_vs_peers.py --backend cuda at N_PEERS = 10^6
#                  (--skip PEERS_SKIP, default none)
#                  (cKDTree on this machine's CPU)
# Needs .devrun (../shared/device/bundle-runtime.sh) and .devpack/tdsolve.tar.xz
# (tdsolve, stripped), unpacked into .devbin.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/cull-gpu}
mkdir -p "$out"
parts=" ${PARTS:-tests big} "
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -d '\n')
summary=$out/summary-$gpu.txt
step() {  # step NAME SECONDS COMMAND...: run with a time limit, log, record the status
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" bash .devrun/on-device.sh "$@" >"$out/$name-$gpu.log" 2>&1
  local rc=$?
  printf '%-34s rc=%-3d %4ds\n' "$name" "$rc" $((SECONDS - t0)) | tee -a "$summary"
  [ $rc -eq 0 ] || tail -n 30 "$out/$name-$gpu.log"
}
mkdir -p .devbin
for pack in .devpack/*.tar.xz; do [ -f "$pack" ] && tar -C .devbin -xJf "$pack"; done
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee -a "$summary"
export TDSOLVE_REQUIRE_GPU=1 TDSOLVE_BIN=$PWD/.devbin/tdsolve TDSOLVE_MPIEXEC=mpirun
bin=$PWD/.devbin/tdsolve
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ $parts == *" tests "* ]]; then
  step e2e_cull_gpu 300 python3 tests/e2e/test_cull.py -v CullGpuTest
  step e2e_gpu_select 400 python3 tests/e2e/test_gpu.py -v -k hist -k knn -k collide -k radius
fi
# Every GPU class that compares the CUDA backend's files with the CPU's
# (the epilogue types: store, histogram, select, top-k, triplet reduce and
# store), the lab's test left out (a LAB=OFF build).
if [[ $parts == *" epi "* ]]; then
  step e2e_cull_gpu 200 python3 tests/e2e/test_cull.py -v CullGpuTest
  step e2e_triplet_gpu 150 python3 tests/e2e/test_triplet.py -v TripletGpuTest
  step e2e_sw_gpu 120 python3 tests/e2e/test_sw.py -v SwGpuTest
fi
if [[ $parts == *" gpu "* ]]; then
  step e2e_gpu 400 python3 tests/e2e/test_gpu.py -v -k identical -k knn -k picks -k errors -k orders
fi
# triplet --cull against --cull off on the GPU (jobs/bench/triplet_vs_lammps.py
# without LAMMPS, which the GPU machine lacks), N_TRIP = side^3
if [[ $parts == *" trip "* ]]; then
  # python3 outside on-device.sh (its h5py, numpy); tdsolve inside it
  for side in ${TRIP_SIDE:-32}; do
    timeout 400 python3 jobs/bench/triplet_vs_lammps.py --tdsolve "$bin" --lmp "" \
      --launcher "bash $PWD/.devrun/on-device.sh" --backend cuda --side "$side" ${TRIP_DENSE:+--dense} \
      --repeat 3 >"$out/triplet-bench-$side-$gpu.md" 2>&1
    echo "triplet_bench side $side rc=$?" | tee -a "$summary"
    cat "$out/triplet-bench-$side-$gpu.md"
  done
fi

# one NAME ARGS...: a culled tdsolve run with --stats; a CSV row
# name,n,seconds_total,seconds_compute,line (the cull line and the summary).
one() {
  local name=$1; shift
  bash .devrun/on-device.sh "$bin" "$@" --backend cuda --output "$work/o.h5" --overwrite \
    --stats "$work/s.json" --progress none >"$work/log" 2>&1
  local rc=$?
  local tot comp
  tot=$(python3 -c "import json;print(json.load(open('$work/s.json'))['total_s'])" 2>/dev/null)
  comp=$(python3 -c "import json;print(json.load(open('$work/s.json'))['compute_s'])" 2>/dev/null)
  printf '%-28s rc=%d total %8s s compute %8s s | %s\n' "$name" "$rc" "$tot" "$comp" \
    "$(grep -h 'culled\|dense\|found\|binned' "$work/log" | tr '\n' ' ')" | tee -a "$summary"
  python3 -c "import json; s = json.load(open('$work/s.json')).get('setup_s', {}); print('  set-up %.2f s:' % sum(s.values()), ', '.join('%s %.2f' % kv for kv in s.items() if kv[1] >= 0.05))" 2>/dev/null | tee -a "$summary"
  echo "$name,$tot,$comp" >>"$out/cull-$gpu.csv"
  rm -f "$work/o.h5"
}
radius() { python3 -c "import math;print((30/(4/3*math.pi*$1))**(1/3))"; }

if [[ $parts == *" big "* ]]; then
  n=${N_BIG:-10000000}
  nh=${N_HIST:-$n}
  r=$(radius "$n")
  for rep in 1 2; do
    one "knn-radius n=$n" knn --generate uniform:$n:3:1 --radius "$r"
    one "hist n=$nh" hist --generate uniform:$nh:3:1 --bins 50 --range 0:0.05
    one "hist-box n=$nh" hist --generate uniform:$nh:3:1 --bins 50 --range 0:0.05 --box 1,1,1
    one "collide n=$n" collide --generate spheres:$n:3:1
  done
fi

if [[ $parts == *" dense "* ]]; then
  n=${N_DENSE:-1000000}
  r=$(radius "$n")
  for cull in on off; do
    one "knn-radius n=$n $cull" knn --generate uniform:$n:3:1 --radius "$r" --cull $cull
    one "hist n=$n $cull" hist --generate uniform:$n:3:1 --bins 50 --range 0:0.05 --cull $cull
    one "collide n=$n $cull" collide --generate spheres:$n:3:1 --cull $cull
  done
fi

if [[ $parts == *" periodic "* ]]; then
  step e2e_periodic_gpu 400 python3 tests/e2e/test_periodic.py -v PeriodicGpuTest
  step e2e_cull_gpu 200 python3 tests/e2e/test_cull.py -v CullGpuTest
  n=${N_BIG:-10000000}
  r=$(radius "$n")
  tilt=${TILT:-0.2,-0.1,0.15}
  for rep in 1 2; do
    for box in "--box 1,1,1" "--box 1,1,1 --tilt $tilt"; do
      tag=$([[ $box == *tilt* ]] && echo tri || echo ortho)
      one "knn-radius $tag n=$n" knn --generate uniform:$n:3:1 --radius "$r" $box
      one "hist $tag n=$n" hist --generate uniform:$n:3:1 --bins 50 --range 0:0.05 $box
      one "collide $tag n=$n" collide --generate spheres:$n:3:1 $box
    done
  done
  for side in ${TRIP_SIDE:-64}; do
    for t in 0 0.1; do
      timeout 300 python3 jobs/bench/triplet_vs_lammps.py --tdsolve "$bin" --lmp "" \
        --launcher "bash $PWD/.devrun/on-device.sh" --backend cuda --side "$side" --periodic --tilt $t \
        --repeat 2 >"$out/triplet-periodic-$side-$t-$gpu.md" 2>&1
      echo "triplet_periodic side $side tilt $t rc=$?" | tee -a "$summary"
      cat "$out/triplet-periodic-$side-$t-$gpu.md"
    done
  done
fi

if [[ $parts == *" knnk "* ]]; then
  step e2e_cull_gpu_knn 300 python3 tests/e2e/test_cull.py -v -k neighbours CullGpuTest
  n=${N_BIG:-10000000}
  for rep in 1 2; do
    one "knn-k16 n=1e6" knn --generate uniform:1000000:3:1 --k 16
    one "knn-k16 n=$n" knn --generate uniform:$n:3:1 --k 16
    one "knn-k16 n=$n block 64" knn --generate uniform:$n:3:1 --k 16 --block 64
    one "knn-k16 n=1e6 dense" knn --generate uniform:1000000:3:1 --k 16 --cull off
    one "knn-k16 n=2e5 d=32 dense" knn --generate uniform:200000:32:1 --k 16
  done
fi

if [[ $parts == *" with "* ]]; then
  step e2e_cull_gpu 300 python3 tests/e2e/test_cull.py -v CullGpuTest
  step e2e_hist_with_gpu 200 python3 tests/e2e/test_hist_with.py -v HistWithGpuTest
  n=${N_BIG:-10000000}
  h=$((n / 2))
  for rep in 1 2; do
    one "hist n=$n" hist --generate uniform:$n:3:1 --bins 50 --range 0:0.05
    one "hist-with ${h}x$((n - h))" hist --generate uniform:$h:3:1 --with-generate uniform:$((n - h)):3:2 \
      --bins 50 --range 0:0.05
    one "hist-with-box ${h}x$((n - h))" hist --generate uniform:$h:3:1 --with-generate uniform:$((n - h)):3:2 \
      --bins 50 --range 0:0.05 --box 1,1,1
  done
  for cull in on off; do
    one "hist-with 5e5x5e5 $cull" hist --generate uniform:500000:3:1 --with-generate uniform:500000:3:2 \
      --bins 50 --range 0:0.05 --cull $cull
  done
fi

if [[ $parts == *" peers "* ]]; then
  step peers 560 python3 jobs/bench/cutoff_vs_peers.py --tdsolve "$bin" --backend cuda \
    --n "${N_PEERS:-1000000}" --repeat 2 ${PEERS_SKIP:+--skip "$PEERS_SKIP"} --csv "$out/peers-$gpu.csv"
  cat "$out/peers-$gpu.log" >>"$summary"
fi
cp "$summary" "$out/" 2>/dev/null

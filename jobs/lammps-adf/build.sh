#!/bin/bash
# Builds lmp_adf, a LAMMPS with `compute adf` (the reference of
# tests/e2e/test_adf.py, TDSOLVE_LMP_ADF, and of jobs/bench/adf_vs_lammps.py,
# --lmp): Debian 12's liblammps (liblammps-dev) with LAMMPS's own
# compute_adf.cpp of the same version, which Debian's build leaves out.
#
#   jobs/lammps-adf/build.sh SRC OUT
#
# SRC: a LAMMPS source tree of the installed library's version holding
# src/EXTRA-COMPUTE/compute_adf.{cpp,h} (`apt-get source lammps` with a
# deb-src line, or the upstream tarball of that version); OUT: the binary.
set -euo pipefail
src=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
adf=$src/src/EXTRA-COMPUTE
[ -f "$adf/compute_adf.cpp" ] || { echo "no $adf/compute_adf.cpp" >&2; exit 1; }
[ -d /usr/include/lammps ] || { echo "no /usr/include/lammps: apt-get install liblammps-dev" >&2; exit 1; }
# (fmt/: the source tree's bundled copy, which the headers include)
mpicxx -O2 -std=c++17 -I/usr/include/lammps -I"$src/src" -I"$adf" -o "$out" "$here/main.cpp" \
  "$adf/compute_adf.cpp" \
  -llammps
echo "built $out"

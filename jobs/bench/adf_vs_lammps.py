#!/usr/bin/env python3
"""tdsolve adf against LAMMPS compute adf on the same frames, end to end.

N points uniform in a periodic cube at number density RHO (LJ units: 0.8442,
a Lennard-Jones liquid's), FRAMES frames written as one LAMMPS dump (what
both tools read). LAMMPS: the atoms of the dump's first frame
(`read_dump ... add keep`), then `rerun` of the dump with `compute adf
BINS * * * 0 RC 0 RC` and `fix ave/time 1 1 1 c_adf[*] mode vector` writing
each frame's array (a `pair_style zero RC` gives it the neighbour list), as
`lmp` (1 process) and under `mpirun -np RANKS` (Debian's lmp has no compute
adf: --lmp names one built by jobs/lammps-adf/build.sh); tdsolve: `adf --frames :: --cutoff
RC --bins BINS`. Wall-clock seconds of each whole command (the median of
--repeat runs), and whether the counts agree: LAMMPS's per-frame histograms
(recovered exactly from its cumulative column × the centres) summed over the
frames against tdsolve's /counts (float64 on both sides; an angle within
rounding of a bin edge may move between the two codes' ghost-atom and
minimum-image arithmetic).

  python3 jobs/bench/adf_vs_lammps.py --tdsolve build/tdsolve --n 32000 --frames 10
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np


def write_dump(path, frames, L):
    with open(path, "w") as f:
        for q, x in enumerate(frames):
            f.write(f"ITEM: TIMESTEP\n{q}\nITEM: NUMBER OF ATOMS\n{len(x)}\n")
            f.write(f"ITEM: BOX BOUNDS pp pp pp\n0 {L!r}\n0 {L!r}\n0 {L!r}\n")
            f.write("ITEM: ATOMS id type x y z\n")
            ids = np.arange(1, len(x) + 1)
            np.savetxt(f, np.column_stack([ids, np.ones(len(x)), x]), fmt=["%d", "%d", "%.17g", "%.17g", "%.17g"])


def timed(cmd, cwd):
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return dt


def lammps_hist(path, bins, n, frames):
    """The frames' histograms summed, from `fix ave/time ... mode vector`
    output: counts = diff(cumulative) × centres (all n atoms are centres)."""
    rows = [l.split() for l in open(path) if l.strip() and not l.startswith("#")]
    total, at = np.zeros(bins, np.int64), 0
    for _ in range(frames):
        at += 1  # "TIMESTEP NROWS"
        cum = np.array([float(r[3]) for r in rows[at:at + bins]])
        at += bins
        total += np.rint(np.diff(cum, prepend=0.0) * n).astype(np.int64)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=32000)
    ap.add_argument("--frames", type=int, default=10)
    ap.add_argument("--rho", type=float, default=0.8442)
    ap.add_argument("--rc", type=float, default=1.5)
    ap.add_argument("--bins", type=int, default=180)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--tdsolve", default=os.environ.get("TDSOLVE_BIN", "build/tdsolve"))
    ap.add_argument("--lmp", default="lmp")
    ap.add_argument("--mpiexec", default=os.environ.get("TDSOLVE_MPIEXEC", "mpiexec"))
    ap.add_argument("--no-lammps", action="store_true")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="tdsolve_adf_")
    L = (a.n / a.rho) ** (1 / 3)
    rng = np.random.default_rng(7)
    frames = [rng.random((a.n, 3)) * L for _ in range(a.frames)]
    dump = os.path.join(d, "t.dump")
    write_dump(dump, frames, L)
    out = os.path.join(d, "adf.h5")
    td = [a.tdsolve, "adf", "--input", dump, "--frames", "::", "--cutoff", repr(a.rc), "--bins", str(a.bins),
          "--precision", "float64", "--backend", a.backend, "--output", out, "--overwrite", "--progress", "none",
          "--quiet"]
    t_td = statistics.median(timed(td, d) for _ in range(a.repeat))
    with h5py.File(out, "r") as f:
        counts = f["counts"][()]
    print(f"{a.n} points, {a.frames} frames, density {a.rho}, cutoff {a.rc}, {a.bins} bins, "
          f"{counts.sum() / a.frames / a.n:.1f} angles a centre a frame")
    print(f"{'tool':42} {'seconds':>9} {'frames/s':>9}")
    print(f"{'tdsolve adf (' + a.backend + ')':42} {t_td:9.2f} {a.frames / t_td:9.2f}")
    if a.no_lammps:
        return
    with open(os.path.join(d, "in.adf"), "w") as f:
        f.write(f"units lj\natom_style atomic\nboundary p p p\nregion b block 0 {L!r} 0 {L!r} 0 {L!r}\n"
                f"create_box 1 b\nmass 1 1.0\nread_dump t.dump 0 x y z box yes add keep\n"
                f"pair_style zero {a.rc!r}\npair_coeff * *\n"
                f"neighbor 0.3 bin\ncompute a all adf {a.bins} * * * 0.0 {a.rc!r} 0.0 {a.rc!r}\n"
                f"fix f all ave/time 1 1 1 c_a[*] mode vector file adf.txt format \" %.17g\"\n"
                f"rerun t.dump dump x y z box yes\n")
    lmp_one = statistics.median(timed([a.lmp, "-in", "in.adf", "-log", "none", "-screen", "none"], d)
                                for _ in range(a.repeat))
    print(f"{'LAMMPS compute adf (lmp, 1 process)':42} {lmp_one:9.2f} {a.frames / lmp_one:9.2f}")
    ref = lammps_hist(os.path.join(d, "adf.txt"), a.bins, a.n, a.frames)
    lmp_mpi = statistics.median(
        timed([a.mpiexec, "-n", str(a.ranks), a.lmp, "-in", "in.adf", "-log", "none", "-screen", "none"], d)
        for _ in range(a.repeat))
    print(f"{f'LAMMPS compute adf (mpirun -np {a.ranks})':42} {lmp_mpi:9.2f} {a.frames / lmp_mpi:9.2f}")
    moved = int(np.abs(ref - counts).sum())
    print(f"counts: tdsolve {counts.sum()}, LAMMPS {ref.sum()}; |difference| summed over bins {moved}")


if __name__ == "__main__":
    main()

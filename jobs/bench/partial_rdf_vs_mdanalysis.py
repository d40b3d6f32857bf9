#!/usr/bin/env python3
"""Partial RDFs of a water-like system over the frames of a trajectory:
`tdsolve hist --frames --types --exclude-block 3` (O-O, H-O, H-H in one run,
intra-molecular pairs left out) against MDAnalysis, which needs one InterRDF
a pair (O-O with exclusion_block (1, 1), H-O (2, 1), H-H (2, 2)) over the same
frames; end to end, on one machine in one run.

N atoms (N/3 molecules O H H, in that order) at density RHO (1/Å³) uniform
in a cubic box, FRAMES frames in an H5MD file (what both tools read), RMAX
the cutoff (Å), 100 bins. Prints a table (seconds, frames/s) and whether the
counts agree (MDAnalysis holds float32 coordinates: a pair within rounding
of an edge may move; its counts of one type are ordered: twice ours).

  python3 jobs/bench/partial_rdf_vs_mdanalysis.py [--n N] [--frames F] [--rmax R]
        [--rho RHO] [--backend cpu|cuda] [--tdsolve PATH] [--no-mdanalysis]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rdf_frames_vs_mdanalysis import write_h5md  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--rmax", type=float, default=8.0)
    ap.add_argument("--rho", type=float, default=0.1)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--tdsolve", default=os.environ.get("TDSOLVE_BIN", "build/tdsolve"))
    ap.add_argument("--no-mdanalysis", action="store_true")
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    n = a.n - a.n % 3
    box = (n / a.rho) ** (1 / 3)
    work = a.dir or tempfile.mkdtemp(prefix="tdsolve_partial_")
    traj, labels = os.path.join(work, "t.h5md"), os.path.join(work, "types.txt")
    write_h5md(traj, n, a.frames, box, 5)
    names = np.array(["O" if k % 3 == 0 else "H" for k in range(n)])
    np.savetxt(labels, names, fmt="%s")
    out = os.path.join(work, "partials.h5")
    if os.path.exists(out):
        os.remove(out)
    t0 = time.perf_counter()
    r = subprocess.run([a.tdsolve, "hist", "--input", traj, "--frames", "::", "--types", labels, "--exclude-block",
                        "3", "--bins", "100", "--range", f"0:{a.rmax}", "--backend", a.backend, "--output", out,
                        "--progress", "none", "--quiet"], capture_output=True, text=True)
    t_td = time.perf_counter() - t0
    if r.returncode:
        sys.exit(r.stderr)
    with h5py.File(out, "r") as f:
        pairs = [p.decode() for p in f["pair"][()]]
        counts = f["counts"][()]
    rows = [("tdsolve hist --frames --types --exclude-block 3 (one run, 3 partials)", t_td)]
    agree = ""
    if not a.no_mdanalysis:
        import MDAnalysis
        from MDAnalysis.analysis.rdf import InterRDF
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            u = MDAnalysis.Universe.empty(n, trajectory=True)
            u.load_new(traj, format="H5MD", convert_units=False)
            O, H = u.atoms[names == "O"], u.atoms[names == "H"]
            moved = []
            for pair, (ga, gb, block, ordered) in (("H-H", (H, H, (2, 2), 2)), ("H-O", (H, O, (2, 1), 1)),
                                                   ("O-O", (O, O, (1, 1), 2))):
                ref = InterRDF(ga, gb, nbins=100, range=(0, a.rmax), exclusion_block=block)
                ref.run()
                moved.append(int(np.abs(ordered * counts[pairs.index(pair)] - ref.results.count).sum()))
            t_md = time.perf_counter() - t0
        rows.append(("MDAnalysis InterRDF x 3 (H-H, H-O, O-O, exclusion_block)", t_md))
        agree = f"; counts moved across an edge (float32): {moved} of {int(counts.sum())} pairs binned"
    print(f"# {n} atoms ({n // 3} O H H molecules), {a.frames} frames, box {box:.2f} Å, rmax {a.rmax} Å, 100 bins, "
          f"backend {a.backend}; pairs {pairs}{agree}")
    print("| tool | seconds | frames/s |")
    print("|---|---|---|")
    for name, t in rows:
        print(f"| {name} | {t:.2f} | {a.frames / t:.3g} |")


if __name__ == "__main__":
    main()

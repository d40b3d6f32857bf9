#!/usr/bin/env python3
"""An A-B RDF of two point sets: `tdsolve hist --with B --box` against
MDAnalysis InterRDF(A, B) (its cell-list capped_distance) and, where it
fits in memory, numpy.histogram(scipy cdist) with the box's minimum image
left out (no box: plain distances); end to end, one machine, one run.

A: N points uniform in a periodic cube at number density RHO (LJ units,
0.8442), B: N/RATIO of them; RMAX the histogram's upper edge, 200 bins,
float32 tdsolve (float64 with --precision). Prints seconds per tool, the
ratio, and whether the counts agree (MDAnalysis computes from float32
coordinates: a pair within rounding of an edge may move).

  python3 jobs/bench/ab_rdf_vs_peers.py [--n N] [--ratio R] [--rmax R]
        [--backend cpu|cuda] [--tdsolve PATH] [--repeat K]
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time
import warnings

import h5py
import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=32000)
    ap.add_argument("--ratio", type=int, default=10)
    ap.add_argument("--rmax", type=float, default=4.0)
    ap.add_argument("--rho", type=float, default=0.8442)
    ap.add_argument("--bins", type=int, default=200)
    ap.add_argument("--precision", default="float32")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tdsolve", default=os.environ.get("TDSOLVE_BIN", "build/tdsolve"))
    a = ap.parse_args()
    L = (a.n / a.rho) ** (1 / 3)
    rng = np.random.default_rng(7)
    A, B = rng.random((a.n, 3)) * L, rng.random((a.n // a.ratio, 3)) * L
    work = tempfile.mkdtemp(prefix="ab_rdf_")
    pa, pb, out = os.path.join(work, "a.npy"), os.path.join(work, "b.npy"), os.path.join(work, "h.h5")
    np.save(pa, A)
    np.save(pb, B)
    cmd = [a.tdsolve, "hist", "--input", pa, "--with", pb, "--box", f"{L!r},{L!r},{L!r}", "--bins", str(a.bins),
           "--range", f"0:{a.rmax!r}", "--precision", a.precision, "--backend", a.backend, "--output", out,
           "--overwrite", "--progress", "none", "--quiet"]
    times = []
    for _ in range(a.repeat):
        t = time.perf_counter()
        subprocess.run(cmd, check=True)
        times.append(time.perf_counter() - t)
    ours = statistics.median(times)
    with h5py.File(out, "r") as f:
        counts = f["counts"][()]
    print(f"A {len(A)} x B {len(B)} points, box {L:.3f}, r_max {a.rmax}, {a.bins} bins, {len(A) * len(B):.3g} pairs")
    print(f"tdsolve hist --with ({a.backend}, {a.precision}): {ours:8.3f} s (median of {a.repeat}, end to end)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import MDAnalysis
            from MDAnalysis.analysis.rdf import InterRDF
            t = time.perf_counter()
            u = MDAnalysis.Universe.empty(len(A) + len(B), trajectory=True)
            u.atoms.positions = np.vstack([A, B]).astype(np.float32)
            u.dimensions = [L, L, L, 90, 90, 90]
            r = InterRDF(u.atoms[:len(A)], u.atoms[len(A):], nbins=a.bins, range=(0, a.rmax)).run()
            mda = time.perf_counter() - t
        moved = int(np.abs(r.results.count - counts).sum())
        print(f"MDAnalysis InterRDF(A, B):            {mda:8.3f} s  ({mda / ours:.1f}x tdsolve's time); "
              f"counts differ by {moved} of {int(counts.sum())} pairs")
    except ImportError:
        print("MDAnalysis: not installed")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""An RDF averaged over the frames of a trajectory: `tdsolve hist --frames`
(one run) against MDAnalysis InterRDF over the same frames, and against
one tdsolve run a frame (what a user did before --frames), end to end,
on one machine in one run.

The trajectory: N atoms at density RHO (1/Å³, about water's oxygens times
3) uniform in a cubic box, FRAMES frames, written as H5MD (what both tools
read). RMAX is the RDF's cutoff (Å), 100 bins. Prints a table (seconds,
frames/s, pairs binned/s) and whether the counts agree (MDAnalysis holds
float32 coordinates: a pair within rounding of an edge may move).

  python3 jobs/bench/rdf_frames_vs_mdanalysis.py [--n N] [--frames F] [--rmax R]
        [--rho RHO] [--backend cpu|cuda] [--tdsolve PATH] [--mpiexec CMD --ranks K]
        [--per-frame-runs K] [--no-mdanalysis]
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
import warnings

import h5py
import numpy as np


def write_h5md(path, n, frames, box, seed):
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        f.create_group("h5md").attrs["version"] = [1, 1]
        g = f.create_group("particles/all")
        d = g.create_dataset("position/value", (frames, n, 3), dtype=np.float32)
        for k in range(frames):
            d[k] = (rng.random((n, 3)) * box).astype(np.float32)
        g["position/step"] = np.arange(frames)
        g["position/time"] = np.arange(frames, dtype=np.float64)
        # as MDAnalysis's H5MDWriter lays a box out (a value per frame)
        g["box/edges/value"] = np.repeat(np.diag([box] * 3).astype(np.float32)[None], frames, 0)
        g["box/edges/step"] = np.arange(frames)
        g["box/edges/time"] = np.arange(frames, dtype=np.float64)
        g["box"].attrs["dimension"] = 3
        g["box"].attrs["boundary"] = np.array([b"periodic"] * 3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--frames", type=int, default=50)
    ap.add_argument("--rmax", type=float, default=12.0)
    ap.add_argument("--rho", type=float, default=0.1)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--tdsolve", default=os.environ.get("TDSOLVE_BIN", "build/tdsolve"))
    ap.add_argument("--mpiexec", default="")
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--per-frame-runs", type=int, default=5,
                    help="time this many one-frame runs (--frame K) and scale to all frames (0: none)")
    ap.add_argument("--no-mdanalysis", action="store_true")
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()

    box = (a.n / a.rho) ** (1 / 3)
    d = a.dir or tempfile.mkdtemp(prefix="tdsolve_rdf_")
    traj = os.path.join(d, "traj.h5md")
    t0 = time.perf_counter()
    write_h5md(traj, a.n, a.frames, box, 1)
    print(f"trajectory: n = {a.n}, {a.frames} frames, box {box:.2f} Å (density {a.rho}/Å³), rmax {a.rmax} Å, "
          f"written in {time.perf_counter() - t0:.1f} s ({traj})")
    launch = (shlex.split(a.mpiexec) + ["-n", str(a.ranks)]) if a.mpiexec else []
    common = ["--bins", "100", "--range", f"0:{a.rmax}", "--backend", a.backend, "--precision", "float32",
              "--progress", "none", "--quiet", "--overwrite"]
    rows = []

    out = os.path.join(d, "rdf.h5")
    # "::", not ":": mpirun takes a lone ':' as the end of an application context
    t0 = time.perf_counter()
    subprocess.run([*launch, a.tdsolve, "hist", "--input", traj, "--frames", "::", *common, "--output", out],
                   check=True)
    t_one = time.perf_counter() - t0
    with h5py.File(out, "r") as f:
        counts = f["counts"][()]
        rdf = f["rdf"][()]
    pairs = a.frames * a.n * (a.n - 1) / 2
    rows.append((f"tdsolve hist --frames ({a.backend}, {a.ranks} rank{'s' if a.ranks > 1 else ''})", t_one))

    if a.per_frame_runs > 0:
        k = min(a.per_frame_runs, a.frames)
        t0 = time.perf_counter()
        for q in range(k):
            subprocess.run([*launch, a.tdsolve, "hist", "--input", traj, "--frame", str(q), *common, "--output",
                            os.path.join(d, f"f{q}.h5")], check=True)
        t_each = (time.perf_counter() - t0) / k
        rows.append((f"tdsolve hist --frame K, a run a frame ({k} timed, x {a.frames})", t_each * a.frames))

    agree = ""
    if not a.no_mdanalysis:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import MDAnalysis
            from MDAnalysis.analysis.rdf import InterRDF
            u = MDAnalysis.Universe.empty(a.n, trajectory=True)
            t0 = time.perf_counter()
            u.load_new(traj, format="H5MD", convert_units=False)
            r = InterRDF(u.atoms, u.atoms, nbins=100, range=(0, a.rmax), exclusion_block=(1, 1)).run()
            t_mda = time.perf_counter() - t0
        rows.append(("MDAnalysis InterRDF (1 core)", t_mda))
        moved = np.abs(counts * 2 - r.results.count)
        agree = (f"counts vs InterRDF: {int(moved.sum())} of {int(r.results.count.sum() // 2)} pairs in another "
                 f"bin (float32), rdf max rel. diff {np.max(np.abs(rdf - r.results.rdf) / np.maximum(r.results.rdf, 1e-12)):.2e}")

    print(f"{'what':<58} {'seconds':>9} {'frames/s':>9} {'pairs/s':>10}")
    for what, t in rows:
        print(f"{what:<58} {t:9.2f} {a.frames / t:9.2f} {pairs / t:10.3g}")
    if agree:
        print(agree)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""tdsolve's culled cutoff queries (--cull on) against the tools a user would
otherwise pick, on the same points in the same run, end to end:

  knn-radius  knn --radius R, R giving about 30 neighbours a point in the unit
              cube, vs scipy cKDTree(x).query_pairs(R) (tree build included,
              one thread) and cKDTree.query_ball_point(x, R, workers=-1,
              return_length=True) (all cores, but it only counts the pairs:
              no pair list comes out of it)
  knn-k       knn --k 16 vs cKDTree.query(x, k=17, workers=-1); tdsolve
              culled (auto; on the CPU also with --block 128, the GPU's)
  hist        hist of the pairs within 1/20 of the box, 50 bins over
              [0, 0.05], in the open unit cube and in a periodic one
              (--box 1,1,1), vs cKDTree.count_neighbors over the bin edges
              (cKDTree(boxsize=1.0) in the box), and MDAnalysis InterRDF on
              one frame in the box when MDAnalysis is installed
  hist-with   the same histogram of the pairs of two sets, A and B the two
              halves of the points (hist --input A --with B), open and in
              the periodic cube, vs cKDTree(A).count_neighbors(cKDTree(B))
              and MDAnalysis InterRDF(A, B) in the box
  collide     spheres:N:3:SEED with the default RMAX, vs cKDTree query_pairs
              within twice the largest radius filtered by d < r_i + r_j
--dense adds tdsolve --cull off to knn-radius, hist, collide and, for
n <= --knn-k-max, knn-k (every pair
tested: for small n only).

The points are those of `tdsolve ... --generate uniform:N:3:SEED` (and
spheres:N:3:SEED), made in NumPy as io/input.cpp makes them and saved as .npy
files that tdsolve (--input) and the peers both read. Times are medians of
--repeat runs: for tdsolve the wall time of the whole command (start-up,
reading, Morton order, computing, writing the HDF5 file) and, from --stats,
the compute time alone; for the peers the Python call from the points in
memory to the result (tree build included, nothing written). tdsolve computes
in --precision (float64 by default: SciPy's precision, so every count must
equal the peer's exactly); every row is checked against the section's first
peer: OK, or MISMATCH, and the difference: of the counts, of knn --k's
neighbour lists (the rows that differ), or the largest one of a hist bin.
In float32 (--precision float32, and MDAnalysis's positions) values within
rounding of a cutoff or a bin edge may cross it: the check then says float32
and shows the difference without judging it; the float64 run is the check.
Under each tdsolve row: its line saying whether it culled. --csv
writes one row per measurement; the exit status is 1 after a MISMATCH.

    jobs/bench/cutoff_vs_peers.py [--tdsolve build/tdsolve] [--n 1000000] [--repeat 3]
    jobs/bench/cutoff_vs_peers.py --tdsolve build-cpu/tdsolve --n 20000 --repeat 1 --dense

On the GPU machine (--backend cuda): stage the binaries and the runtime here
with jobs/device/stage.sh, carry .devrun and .devpack in the device call, and
there run, through the runtime's launcher (the machine's python3 has NumPy,
SciPy and h5py):

    tar -C .devbin -xJf .devpack/devbin.tar.xz
    python3 jobs/bench/cutoff_vs_peers.py --tdsolve .devbin/tdsolve --backend cuda \\
        --mpirun "bash .devrun/on-device.sh" --csv $OUT/cutoff.csv

One device command may run 10 minutes. The peers run on that machine's CPU
cores, most of them on one: cKDTree.count_neighbors took 2 s at n = 10^5 on
the development machine and its work grows as n^2 here (the pairs within 0.05
of a point grow with n), so at n = 10^6 the hist section alone may need
minutes a repeat. Split the run with --skip (e.g. --skip hist, then
--skip knn-radius,knn-k,collide) or take --repeat 1. InterRDF keeps every
ordered pair within the range in memory: about 5e8 pairs at n = 10^6.
"""
import argparse
import csv
import datetime
import importlib.util
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np
from scipy.spatial import cKDTree

SECTIONS = ("knn-radius", "knn-k", "hist", "hist-with", "collide")
NEIGHBOURS = 30  # expected neighbours a point within the knn --radius R
K = 16
BINS, R_MAX = 50, 0.05  # hist: 50 bins over [0, 1/20 of the unit box]
SEED = 7
CULL_LINE = re.compile(r"^tdsolve \w+: (culled|dense) \(")


def splitmix64(x):
    """io/random.hpp's splitmix64 on a uint64 array (wrapping arithmetic)."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def unit_doubles(base, count):
    """[0, 1) doubles of the counters base, base + 1, ..., as io/input.cpp."""
    with np.errstate(over="ignore"):
        bits = splitmix64(np.uint64(base) + np.arange(count, dtype=np.uint64))
    return (bits >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def uniform_points(n, dim, seed):
    """The points of --generate uniform:N:DIM:SEED."""
    return unit_doubles(int(splitmix64(seed)), n * dim).reshape(n, dim)


def spheres(n, seed):
    """The rows x, y, z, r of --generate spheres:N:3:SEED with the default
    RMAX, (pi (N-1))^(-1/3): about 2 overlapping partners a sphere (math.cbrt
    is the C library's, as tdsolve's std::cbrt)."""
    rmax = math.cbrt(1.0 / (math.pi * (n - 1)))
    radii = rmax * (1.0 - unit_doubles(int(splitmix64(int(splitmix64(seed)) ^ 0x7261646969)), n))
    return np.hstack([uniform_points(n, 3, seed), radii[:, None]])


def verdict(diff, exact, name="diff"):
    """OK or MISMATCH where diff must be 0; where it need not (float32: values
    within rounding of a cutoff or a bin edge may cross it), "float32", the
    difference shown but not judged."""
    status = ("OK" if diff == 0 else "MISMATCH") if exact else "float32"
    return f"{status} ({name} {diff})"


def bins_check(want, exact):
    """The check of a histogram row against the peer's counts `want`."""
    return lambda got: verdict(int(np.abs(got - want).max()), exact, "largest bin diff")


class Bench:
    """Runs the measurements, prints a row each and keeps them for --csv."""

    def __init__(self, a, tmp):
        self.a, self.rows = a, []
        self.exact = a.precision == "float64"  # the checks of knn and hist: exact, or float32's shown only
        self.launch = shlex.split(a.mpirun)
        self.points, self.spheres = os.path.join(tmp, "points.npy"), os.path.join(tmp, "spheres.npy")
        self.out, self.stats = os.path.join(tmp, "out.h5"), os.path.join(tmp, "stats.json")
        self.ref = None  # the section's first row's seconds, for the speed-up column

    def section(self, title):
        print(f"\n## {title}")
        print(f"{'what':11s} {'tool':60s} {'seconds':>9s} {'compute':>9s} {'pairs/count':>12s} {'vs ref':>7s}  check")
        self.ref = None

    def row(self, what, tool, seconds, compute, count, check):
        self.ref = self.ref or seconds
        comp = "" if compute is None else f"{compute:9.3f}"
        print(f"{what:11s} {tool:60s} {seconds:9.3f} {comp:>9s} {count:12d} {self.ref / seconds:7.2f}  {check}",
              flush=True)
        self.rows.append(dict(what=what, tool=tool, n=self.a.n, seconds=f"{seconds:.4f}",
                              compute_seconds="" if compute is None else f"{compute:.4f}", count=count, check=check))

    def peer(self, what, tool, fn, check=lambda result: "reference"):
        """Times fn() (median of --repeat); fn returns (count, result); a row."""
        times = []
        for _ in range(self.a.repeat):
            t = time.perf_counter()
            count, result = fn()
            times.append(time.perf_counter() - t)
        self.row(what, tool, statistics.median(times), None, count, check(result))
        return count, result

    def tdsolve(self, what, tool, args, read, check):
        """Runs tdsolve (median of --repeat: wall time, and compute_s from
        --stats), then read(h5py file) -> (count, result) and a row whose
        check is check(result); prints the run's cull line under it."""
        cmd = [*self.launch, self.a.tdsolve, *args, "--backend", self.a.backend, "--output", self.out,
               "--overwrite", "--progress", "none", "--stats", self.stats]
        walls, computes = [], []
        for _ in range(self.a.repeat):
            t = time.perf_counter()
            run = subprocess.run(cmd, capture_output=True, text=True)
            walls.append(time.perf_counter() - t)
            if run.returncode != 0:
                sys.exit(f"failed (exit {run.returncode}): {shlex.join(cmd)}\n{run.stdout}{run.stderr}")
            with open(self.stats) as f:
                computes.append(json.load(f)["compute_s"])
        with h5py.File(self.out, "r") as f:
            count, result = read(f)
        os.remove(self.out)
        self.row(what, tool, statistics.median(walls), statistics.median(computes), count, check(result))
        for line in run.stdout.splitlines():
            if CULL_LINE.match(line):
                print(f"{'':11s}   {line}")


def knn_radius(b, x):
    n = len(x)
    r = (NEIGHBOURS / (4 / 3 * math.pi * n)) ** (1 / 3)
    b.section(f"knn --radius {r:.6g}: every pair within R (about {NEIGHBOURS} neighbours a point)")
    want, _ = b.peer("knn-radius", "scipy cKDTree.query_pairs (1 thread)",
                     lambda: (len(cKDTree(x).query_pairs(r, output_type="ndarray")), None))

    def ball_counts():
        # Each point's count includes itself, and each pair is counted from both ends.
        pairs = (int(cKDTree(x).query_ball_point(x, r, workers=-1, return_length=True).sum()) - n) // 2
        return pairs, pairs

    b.peer("knn-radius", "scipy cKDTree.query_ball_point workers=-1 (count only)", ball_counts,
           lambda got: verdict(abs(got - want), True))
    for cull in ["on", "off"] if b.a.dense else ["on"]:
        b.tdsolve("knn-radius", f"tdsolve knn --radius --cull {cull} ({b.a.precision})",
                  ["knn", "--input", b.points, "--radius", repr(r), "--precision", b.a.precision, "--cull", cull],
                  lambda f: (f["pairs"].shape[0], f["pairs"].shape[0]),
                  lambda got: verdict(abs(got - want), b.exact))


def knn_k(b, x):
    n = len(x)
    b.section(f"knn --k {K}: the {K} nearest other points of each")
    _, idx = b.peer("knn-k", f"scipy cKDTree.query k={K + 1} workers=-1",
                    lambda: (n * K, cKDTree(x).query(x, k=K + 1, workers=-1)[1][:, 1:]))
    # culled (auto; on the CPU its tiles are of 32 points unless --block is
    # given, so --block 128, the GPU's, beside it); dense only with --dense
    # and n <= --knn-k-max
    runs = [("auto", [])]
    if b.a.backend == "cpu":
        runs.append(("auto", ["--block", "128"]))
    if b.a.dense and n <= b.a.knn_k_max:
        runs.append(("off", []))
    for cull, extra in runs:
        b.tdsolve("knn-k", f"tdsolve knn --k {K} --cull {cull} {' '.join(extra)} ({b.a.precision})",
                  ["knn", "--input", b.points, "--k", str(K), "--precision", b.a.precision, "--cull", cull,
                   *extra],
                  lambda f: (f["indices"].size, f["indices"][:]),
                  lambda got: verdict(int((got != idx).any(axis=1).sum()), b.exact, "rows differing"))


def hist(b, x):
    mdanalysis = importlib.util.find_spec("MDAnalysis") is not None
    edges = np.linspace(0.0, R_MAX, BINS + 1)

    for box in (False, True):
        what = "hist-box" if box else "hist"
        b.section(f"hist{' --box 1,1,1' if box else ''}: {BINS} bins over [0, {R_MAX}] (1/20 of the unit box)")

        def count_neighbors():
            tree = cKDTree(x, boxsize=1.0) if box else cKDTree(x)
            # Ordered pairs within each edge, self pairs included: a bin's pairs i < j are half the difference.
            per_bin = np.diff(tree.count_neighbors(tree, edges)) // 2
            return int(per_bin.sum()), per_bin

        peer = "cKDTree(boxsize=1.0)" if box else "cKDTree"
        _, want = b.peer(what, f"scipy {peer}.count_neighbors (1 thread)", count_neighbors)
        if box and mdanalysis:
            b.peer(what, "MDAnalysis InterRDF (one frame, box 100 A, float32)", lambda: interrdf(x, edges),
                   bins_check(want, False))
        elif box:
            print(f"{what:11s} MDAnalysis InterRDF: skipped, MDAnalysis is not installed")
        for cull in ["on", "off"] if b.a.dense else ["on"]:
            b.tdsolve(what, f"tdsolve hist --cull {cull} ({b.a.precision})",
                      ["hist", "--input", b.points, "--bins", str(BINS), "--range", f"0:{R_MAX}",
                       "--precision", b.a.precision, "--cull", cull, *(["--box", "1,1,1"] if box else [])],
                      lambda f: (int(f["counts"][:].sum()), f["counts"][:]), bins_check(want, b.exact))


def interrdf(x, edges, split=None):
    """InterRDF's pair counts of the points scaled to a 100 Å box (split:
    of the atoms [0, split) against [split, n), each pair once)."""
    import MDAnalysis
    from MDAnalysis.analysis.rdf import InterRDF
    side = 100.0
    u = MDAnalysis.Universe.empty(len(x), trajectory=True)
    u.atoms.positions = x * side
    u.dimensions = [side, side, side, 90.0, 90.0, 90.0]
    bins, rng = len(edges) - 1, (edges[0] * side, edges[-1] * side)
    if split is not None:
        rdf = InterRDF(u.atoms[:split], u.atoms[split:], nbins=bins, range=rng).run()
        per_bin = np.rint(rdf.results.count).astype(np.int64)
        return int(per_bin.sum()), per_bin
    rdf = InterRDF(u.atoms, u.atoms, nbins=bins, range=rng, exclusion_block=(1, 1)).run()
    per_bin = np.rint(rdf.results.count).astype(np.int64) // 2  # each pair counted as (i, j) and (j, i)
    return int(per_bin.sum()), per_bin


def hist_with(b, x):
    """The two halves of the points as A and B: hist --input A --with B."""
    mdanalysis = importlib.util.find_spec("MDAnalysis") is not None
    edges = np.linspace(0.0, R_MAX, BINS + 1)
    half = len(x) // 2
    a_path, b_path = b.points.replace(".npy", "_a.npy"), b.points.replace(".npy", "_b.npy")
    np.save(a_path, x[:half])
    np.save(b_path, x[half:])

    for box in (False, True):
        what = "with-box" if box else "with"
        b.section(f"hist --with{' --box 1,1,1' if box else ''}: A = the first {half} points, B = the other "
                  f"{len(x) - half}, {BINS} bins over [0, {R_MAX}]")

        def count_neighbors():
            ta = cKDTree(x[:half], boxsize=1.0) if box else cKDTree(x[:half])
            tb = cKDTree(x[half:], boxsize=1.0) if box else cKDTree(x[half:])
            per_bin = np.diff(ta.count_neighbors(tb, edges))  # each pair (a, b) once
            return int(per_bin.sum()), per_bin

        peer = "cKDTree(boxsize=1.0)" if box else "cKDTree"
        _, want = b.peer(what, f"scipy {peer}(A).count_neighbors({peer}(B)) (1 thread)", count_neighbors)
        if box and mdanalysis:
            b.peer(what, "MDAnalysis InterRDF(A, B) (one frame, box 100 A, float32)",
                   lambda: interrdf(x, edges, half), bins_check(want, False))
        for cull in ["on", "off"] if b.a.dense else ["on"]:
            b.tdsolve(what, f"tdsolve hist --with --cull {cull} ({b.a.precision})",
                      ["hist", "--input", a_path, "--with", b_path, "--bins", str(BINS), "--range", f"0:{R_MAX}",
                       "--precision", b.a.precision, "--cull", cull, *(["--box", "1,1,1"] if box else [])],
                      lambda f: (int(f["counts"][:].sum()), f["counts"][:]), bins_check(want, b.exact))


def collide(b, s):
    b.section("collide: spheres:N:3 with the default RMAX, pairs with d < r_i + r_j")
    c, r = s[:, :3], s[:, 3]

    def query_pairs():
        p = cKDTree(c).query_pairs(2 * r.max(), output_type="ndarray")
        d = np.linalg.norm(c[p[:, 0]] - c[p[:, 1]], axis=1)
        return int((d < r[p[:, 0]] + r[p[:, 1]]).sum()), None

    want, _ = b.peer("collide", "scipy cKDTree.query_pairs(2 rmax) + NumPy filter (1 thread)", query_pairs)
    for cull in ["on", "off"] if b.a.dense else ["on"]:
        b.tdsolve("collide", f"tdsolve collide --cull {cull} (float64)",
                  ["collide", "--input", b.spheres, "--cull", cull],
                  lambda f: (int(f["count"][()]), int(f["count"][()])),
                  lambda got: verdict(abs(got - want), True))


def machine(a):
    cpu = platform.processor()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    line = f"# {platform.node()}: {os.cpu_count()} cores ({cpu})"
    if a.backend == "cuda" and shutil.which("nvidia-smi"):
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True).stdout.strip().replace("\n", ", ")
        line += f", GPU: {gpu}"
    return line


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tdsolve", default=os.path.join(here, "../../build/tdsolve"))
    ap.add_argument("--n", type=int, default=1000000, help="points (and spheres)")
    ap.add_argument("--backend", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--precision", choices=["float32", "float64"], default="float64",
                    help="tdsolve's in knn and hist (collide: float64); float64 checks them exactly")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the median counts")
    ap.add_argument("--mpirun", default="", help='launcher prefix of tdsolve, e.g. "mpirun -n 2 --bind-to none"')
    ap.add_argument("--skip", default="", help=f"comma list of {','.join(SECTIONS)}")
    ap.add_argument("--dense", action="store_true",
                    help="also tdsolve --cull off for knn --radius, hist and collide (O(n^2): small n only)")
    ap.add_argument("--knn-k-max", type=int, default=200000,
                    help="largest n of a dense knn --k (with --dense)")
    ap.add_argument("--csv", help="one row a measurement")
    a = ap.parse_args()
    skip = set(filter(None, a.skip.split(",")))
    if skip - set(SECTIONS):
        ap.error(f"--skip: unknown {','.join(sorted(skip - set(SECTIONS)))}; known: {','.join(SECTIONS)}")

    tmp = tempfile.mkdtemp(prefix="tdsolve_cutoff_")
    try:
        b = Bench(a, tmp)
        x = uniform_points(a.n, 3, SEED)
        np.save(b.points, x)
        version = subprocess.run([*b.launch, a.tdsolve, "--version"], capture_output=True, text=True,
                                 check=True).stdout.split("\n")[0]
        print(machine(a))
        print(f"# {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}, {version} ({a.tdsolve}), "
              f"--backend {a.backend}, {a.mpirun or 'no launcher'}; n = {a.n}, d = 3, uniform:{a.n}:3:{SEED}; "
              f"median of {a.repeat}")
        print("# seconds: the whole tdsolve command, or the peer's call (tree build included); compute: tdsolve's "
              "--stats compute_s; vs ref: the section's first row's seconds / this row's")
        if "knn-radius" not in skip:
            knn_radius(b, x)
        if "knn-k" not in skip:
            knn_k(b, x)
        if "hist" not in skip:
            hist(b, x)
        if "hist-with" not in skip:
            hist_with(b, x)
        if "collide" not in skip:
            s = spheres(a.n, SEED)
            np.save(b.spheres, s)
            collide(b, s)
        if a.csv:
            with open(a.csv, "w", newline="") as f:
                w = csv.DictWriter(f, ["what", "tool", "n", "seconds", "compute_seconds", "count", "check"])
                w.writeheader()
                w.writerows(b.rows)
        bad = [r for r in b.rows if r["check"].startswith("MISMATCH")]
        print(f"\n# {len(bad)} mismatch{'es' if len(bad) != 1 else ''}")
        return 1 if bad else 0
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""tdsolve edm on the CPU (1 and 2 MPI ranks) against scipy.spatial.distance.pdist
on the same points: n = 20000, d = 3 by default, euclidean, float32 and float64.

Times are medians of --repeat runs. For tdsolve: the wall time of the whole
mpirun command (start-up, reading, computing, writing the HDF5 file) and,
from --stats, the compute time alone (max over ranks). For SciPy: pdist alone
(an array in memory, nothing written), in float64 as SciPy computes, and
pdist followed by writing its result with h5py (the same job as tdsolve's).
The machine's file write rate (dd into the page cache) bounds any whole run.

    jobs/bench/cpu_vs_scipy.py [--tdsolve build/tdsolve] [--n 20000] [--d 3]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time

import numpy as np
from scipy.spatial.distance import pdist


def median_time(fn, repeat):
    fn()  # warm-up (page faults of the output, caches)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tdsolve", default=os.path.join(here, "../../build/tdsolve"))
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--metric", default="euclidean")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--mpirun", default="mpirun")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="tdsolve_bench_")
    x = np.random.default_rng(42).random((a.n, a.d))
    src = os.path.join(tmp, "points.npy")
    np.save(src, x)
    out, stats = os.path.join(tmp, "d.h5"), os.path.join(tmp, "s.json")

    print(f"# {platform.node()}: {os.cpu_count()} cores, n={a.n} d={a.d} {a.metric}, median of {a.repeat}")
    print(f"{'what':40s} {'seconds':>9s} {'vs SciPy':>9s}")
    t_scipy = median_time(lambda: pdist(x, a.metric), a.repeat)
    print(f"{'scipy pdist (float64, in memory)':40s} {t_scipy:9.3f} {1.0:9.2f}")

    def pdist_and_save():
        import h5py
        with h5py.File(out, "w") as f:
            f.create_dataset("distances", data=pdist(x, a.metric))

    t_saved = median_time(pdist_and_save, a.repeat)
    print(f"{'scipy pdist + h5py write (float64)':40s} {t_saved:9.3f} {t_scipy / t_saved:9.2f}")
    dd = subprocess.run(["dd", "if=/dev/zero", f"of={out}", "bs=1M", f"count={a.n * (a.n - 1) // 2 * 4 >> 20}"],
                        capture_output=True, text=True).stderr.strip().splitlines()[-1]
    print(f"# dd of the float32 file's size into the page cache: {dd}")
    for precision in ["float32", "float64"]:
        for ranks in [1, 2]:
            # Unbound ranks: with mpirun's default binding 1 rank would get 1 core.
            cmd = [a.mpirun, "-np", str(ranks), "--bind-to", "none", a.tdsolve, "edm", "--input", src, "--output", out, "--overwrite",
                   "--backend", "cpu", "--metric", a.metric, "--precision", precision, "--progress", "none",
                   "--quiet", "--stats", stats]
            compute = []

            def run():
                subprocess.run(cmd, check=True)
                compute.append(json.load(open(stats))["compute_s"])

            wall = median_time(run, a.repeat)
            comp = statistics.median(compute[1:])
            label = f"tdsolve {precision}, {ranks} rank{'s' if ranks > 1 else ''}"
            print(f"{label + ': whole run, file written':40s} {wall:9.3f} {t_scipy / wall:9.2f}")
            print(f"{label + ': compute alone':40s} {comp:9.3f} {t_scipy / comp:9.2f}")
    os.remove(out)


if __name__ == "__main__":
    main()

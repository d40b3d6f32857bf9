#!/usr/bin/env python3
"""The metrics issue 31 brought to SciPy's semantics, timed against SciPy in
the same run (in-process calls, float64, the machine's cores; SciPy's pdist
is single-threaded): hamming and jaccard on 0/1 data (bit-packed popcounts)
and on values 0..3 (BoolValues), dice with weights (SciPy: a Python call per
pair), mahalanobis (SciPy's C loop; tdsolve: euclidean on transformed
points). Prints one line a case: seconds each side, best of --repeat, and
whether the values agree (bits, or the tolerance docs/usage.md states).

  PYTHONPATH=build/python python3 jobs/bench/boolean_values_vs_scipy.py [--n 20000] [--d 64]
"""
import argparse
import time

import numpy as np
from scipy.spatial.distance import pdist

import tdsolve


def best(f, repeat):
    t, r = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = f()
        t = min(t, time.perf_counter() - t0)
    return t, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--n-weighted", type=int, default=1000, help="n for SciPy's per-pair Python path")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    bits = (rng.random((a.n, a.d)) < 0.3).astype(np.float64)
    vals = rng.integers(0, 4, (a.n, a.d)).astype(np.float64)
    w = rng.random(a.d)
    small = bits[: a.n_weighted]
    cont = rng.standard_normal((a.n, 16))
    cases = [
        (f"hamming 0/1 (bits)   n={a.n} d={a.d}", bits, "hamming", {}),
        (f"jaccard 0/1 (bits)   n={a.n} d={a.d}", bits, "jaccard", {}),
        (f"hamming values       n={a.n} d={a.d}", vals, "hamming", {}),
        (f"jaccard values       n={a.n} d={a.d}", vals, "jaccard", {}),
        (f"hamming weighted     n={a.n} d={a.d}", vals, "hamming", {"w": w}),
        (f"dice weighted        n={a.n_weighted} d={a.d}", small, "dice", {"w": w}),
        (f"mahalanobis          n={a.n} d=16", cont, "mahalanobis", {}),
    ]
    # The process's first calls (MPI's start, the first 1.6 GB through
    # /dev/shm) cost seconds: made before the timed ones.
    for metric in ("hamming", "jaccard"):
        tdsolve.pdist(bits, metric)
    print(f"{'case':42s} {'tdsolve s':>10s} {'SciPy s':>10s} {'speed-up':>9s}  values")
    for name, x, metric, kw in cases:
        t_ours, ours = best(lambda: tdsolve.pdist(x, metric, **kw), a.repeat)
        t_theirs, theirs = best(lambda: pdist(x, metric, **kw), 1 if "w" in kw and metric != "hamming" else a.repeat)
        if metric == "mahalanobis":
            agree = "1e-12 rel" if np.allclose(ours, theirs, rtol=1e-12, atol=0) else "DIFFER"
        elif "w" in kw and metric != "hamming" and a.d >= 8:
            agree = "2d u rel" if np.allclose(ours, theirs, rtol=2 * a.d * 2.0**-53, atol=0) else "DIFFER"
        else:
            agree = "bits" if np.array_equal(ours, theirs, equal_nan=True) else "DIFFER"
        print(f"{name:42s} {t_ours:10.3f} {t_theirs:10.3f} {t_theirs / t_ours:8.1f}x  {agree}", flush=True)


if __name__ == "__main__":
    main()

"""Every metric, both precisions, against scipy.spatial.distance.pdist in
float64 (DESIGN: CPU references in float64).

n covers 2, 3, ρ-1, ρ, ρ+1 (ρ = 128, the default block), 1000 and the prime
4099; d covers 1, 3, 4 (compile-time paths) and 17 (the general loop).
Inputs reach tdsolve as .npy, HDF5 and CSV.

The reference is computed on the inputs as tdsolve computes with them:
rounded to float32 in float32 runs (the run cannot know digits its input
type cannot hold). Tolerances, as the issue sets them:
  float64: |err| <= 1e-12 |ref|; float32: |err| <= 1e-6 |ref|.
Cosine in float64 also allows 2 (d + 5) u absolute (u = 2^-53): 1 - cos is
computed at the scale of 1, by SciPy as by us, each side with the textbook
error bound of a d-term dot product, two norms and a division (about
(d + 5) u); so neither side carries relative digits below that for nearly
parallel vectors, and the two may differ by the sum of both bounds.
"""
import concurrent.futures
import itertools
import os
import unittest

import numpy as np
from scipy.spatial.distance import pdist

from common import TempDirTest, read_values, tdsolve

METRICS = ["euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine"]
RHO = 128
NS = [2, 3, RHO - 1, RHO, RHO + 1, 1000, 4099]
DS = [1, 3, 4, 17]


def tolerance(metric, precision, d):
    rtol = 1e-12 if precision == "float64" else 1e-6
    atol = 2 * (d + 5) * 2.0**-53 if (metric == "cosine" and precision == "float64") else 0.0
    return rtol, atol


class ReferenceTest(TempDirTest):
    def run_case(self, n, d, precision, fmt):
        rng = np.random.default_rng(1000 * n + d)
        x = rng.random((n, d))
        if fmt == "npy":
            src = self.save_npy(f"x_{n}_{d}_{precision}.npy", x)
        elif fmt == "h5":
            src = self.save_h5(f"x_{n}_{d}_{precision}.h5", "/group/points", x) + ":/group/points"
        else:
            src = self.path(f"x_{n}_{d}_{precision}.csv")
            np.savetxt(src, x, delimiter=",", fmt="%.17g", header="generated", comments="# ")
        xin = x.astype(np.float32).astype(np.float64) if precision == "float32" else x
        failures = []
        for metric in METRICS:
            out = self.path(f"d_{n}_{d}_{precision}_{metric}.h5")
            tdsolve("edm", "--input", src, "--output", out, "--metric", metric,
                    "--precision", precision, "--progress", "none", "--quiet", check=True)
            got = read_values(out)
            ref = pdist(xin, metric)
            want_dtype = np.float32 if precision == "float32" else np.float64
            if got.dtype != want_dtype or got.shape != ref.shape:
                failures.append(f"{metric} n={n} d={d} {precision}: dtype {got.dtype} shape {got.shape}")
                continue
            rtol, atol = tolerance(metric, precision, d)
            err = np.abs(got.astype(np.float64) - ref)
            bad = err > rtol * np.abs(ref) + atol
            if np.any(bad):
                k = int(np.argmax(bad))
                failures.append(f"{metric} n={n} d={d} {precision}: {int(bad.sum())} values off, e.g. "
                                f"#{k}: {got[k]!r} vs {ref[k]!r}")
            os.remove(out)
        return failures

    def test_all_metrics_sizes_features_precisions(self):
        cases = list(itertools.product(NS, DS, ["float32", "float64"]))
        formats = itertools.cycle(["npy", "npy", "h5", "csv"])
        failures = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            futures = [pool.submit(self.run_case, n, d, p, next(formats)) for n, d, p in cases]
            for f in futures:
                failures += f.result()
        self.assertEqual(failures, [], "\n".join(failures[:20]))
        print(f"{len(cases) * len(METRICS)} runs matched SciPy", flush=True)

    def test_other_blocks(self):
        # Tiles of 1, 7 and 300 pairs: exercises partial tiles in every corner.
        x = np.random.default_rng(7).random((301, 5))
        src = self.save_npy("x.npy", x)
        ref = pdist(x, "euclidean")
        for rho in [1, 7, 300, 301, 1000]:
            out = self.path(f"b{rho}.h5")
            tdsolve("edm", "--input", src, "--output", out, "--block", rho, "--precision", "float64",
                    "--quiet", check=True)
            np.testing.assert_allclose(read_values(out), ref, rtol=1e-12, atol=0)

    def test_generated_points_are_stored_and_match(self):
        out = self.path("g.h5")
        tdsolve("edm", "--generate", "uniform:777:6:5", "--output", out, "--store-points",
                "--metric", "cityblock", "--quiet", check=True)
        import h5py
        with h5py.File(out, "r") as f:
            pts = f["points"][:]
            self.assertEqual(pts.shape, (777, 6))
            self.assertTrue(np.all((pts >= 0) & (pts < 1)))
            ref = pdist(pts.astype(np.float64), "cityblock")
            np.testing.assert_allclose(f["distances"][:], ref, rtol=1e-6)
            self.assertEqual(f.attrs["input"], "uniform:777:6:5")


if __name__ == "__main__":
    unittest.main()

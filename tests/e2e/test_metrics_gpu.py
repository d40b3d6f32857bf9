"""The newer metrics with --backend cuda: files byte-identical to the CPU
backend's (every metric, its logarithms and powers included: metric::log_
and metric::exp_ are the same arithmetic on both), on one and two ranks, for
edm, cross and hist, and within test_metrics.py's tolerances of SciPy.
Skips without a GPU, fails instead under TDSOLVE_REQUIRE_GPU=1."""
import os
import unittest

import h5py
import numpy as np

from common import TempDirTest, gpu_available, tdsolve
from test_metrics import BOOLEAN, points, scipy_ref, tolerance


OK, WHY = gpu_available()
if not OK and os.environ.get("TDSOLVE_REQUIRE_GPU") == "1":
    raise SystemExit(f"TDSOLVE_REQUIRE_GPU=1 but tdsolve cannot use a GPU: {WHY}")

# (metric, SciPy keyword arguments, tdsolve arguments, uses weights)
CASES = [
    ("minkowski", {"p": 3}, ["--p", "3"], False),
    ("minkowski", {"p": 2.5}, ["--p", "2.5"], False),
    ("minkowski", {"p": 0.7}, ["--p", "0.7"], True),
    ("minkowski", {"p": np.inf}, ["--p", "inf"], True),
    ("seuclidean", {}, [], False),
    ("correlation", {}, [], False),
    ("correlation", {}, [], True),
    ("cosine", {}, [], True),
    ("euclidean", {}, [], True),
    ("cityblock", {}, [], True),
    ("chebyshev", {}, [], True),
    ("braycurtis", {}, [], False),
    ("braycurtis", {}, [], True),
    ("canberra", {}, [], False),
    ("canberra", {}, [], True),
    ("jensenshannon", {}, [], False),
    ("jensenshannon", {"base": 2}, ["--base", "2"], False),
]


@unittest.skipUnless(OK, f"no GPU: {WHY}")
class MetricsGpuTest(TempDirTest):
    def run3(self, command, srcs, args):
        """CPU, CUDA on 1 rank and CUDA on 2 ranks: the files' values as bytes."""
        inputs = ["--input", srcs[0]] + (["--with", srcs[1]] if len(srcs) > 1 else [])
        outs = []
        for backend, ranks in [("cpu", 1), ("cuda", 1), ("cuda", 2)]:
            p = self.path(f"{command}_{backend}{ranks}.h5")
            tdsolve(command, *inputs, *args, "--output", p, "--backend", backend, "--overwrite", "--progress",
                    "none", "--quiet", np_=ranks, check=True)
            with h5py.File(p, "r") as f:
                key = "counts" if command == "hist" else "distances"
                outs.append(f[key][()])
        return outs

    def assert_same(self, outs, what):
        self.assertEqual(outs[1].tobytes(), outs[0].tobytes(), f"{what}: GPU != CPU")
        self.assertEqual(outs[2].tobytes(), outs[0].tobytes(), f"{what}: 2 ranks on the GPU != CPU")

    def check_scipy(self, got, ref, metric, precision, d, what):
        rtol, atol = tolerance(metric, precision, d)
        g = got.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(ref), what)
        ok = np.isnan(ref) | (np.abs(g - ref) <= rtol * np.abs(ref) + atol)
        self.assertTrue(ok.all(), f"{what}: {int((~ok).sum())} values off SciPy")

    def test_continuous_and_weighted(self):
        rng = np.random.default_rng(21)
        # d = 3: one feature strip; d = 40: several (float32 strips of 16,
        # float64 of 8), the last partly zero padding. n crosses 128-point
        # sub-tiles and leaves masked edges.
        for precision in ["float32", "float64"]:
            for d in [3, 40]:
                for metric, kw, extra, weighted in CASES:
                    xa, xb = points(rng, 300, d, metric), points(rng, 141, d, metric)
                    dt = np.float32 if precision == "float32" else np.float64
                    fa, fb = self.save_npy("a.npy", xa.astype(dt)), self.save_npy("b.npy", xb.astype(dt))
                    ra, rb = np.load(fa).astype(np.float64), np.load(fb).astype(np.float64)
                    args = ["--metric", metric, "--precision", precision, *extra]
                    kwr = dict(kw)
                    if weighted:
                        w = rng.random(d) * 2
                        w[0] = 0
                        args += ["--weights", self.save_npy("w.npy", w)]
                        kwr["w"] = w
                    what = f"{metric} {kw} {'w ' if weighted else ''}d={d} {precision}"
                    outs = self.run3("edm", [fa], args)
                    self.assert_same(outs, "edm " + what)
                    self.check_scipy(outs[1], scipy_ref(metric, ra, None, kwr), metric, precision, d, "edm " + what)
                    outs = self.run3("cross", [fa, fb], args)
                    self.assert_same(outs, "cross " + what)
                    self.check_scipy(outs[1], scipy_ref(metric, ra, rb, kwr), metric, precision, d,
                                     "cross " + what)

    def test_boolean(self):
        rng = np.random.default_rng(22)
        for d in [5, 70, 1000]:
            x = (rng.random((260, d)) < 0.3).astype(np.float64)
            x[0] = 0
            x[1] = 0
            x[2] = 1
            y = (rng.random((130, d)) < 0.5).astype(np.float64)
            y[3] = 0
            for precision in ["float32", "float64"]:
                dt = np.float32 if precision == "float32" else np.float64
                fa, fb = self.save_npy("a.npy", x.astype(dt)), self.save_npy("b.npy", y.astype(dt))
                for metric in BOOLEAN:
                    what = f"{metric} d={d} {precision}"
                    args = ["--metric", metric, "--precision", precision]
                    outs = self.run3("edm", [fa], args)
                    self.assert_same(outs, "edm " + what)
                    # A newer SciPy may have dropped the metric (1.17 removed
                    # sokalmichener): then the bytes are still compared with
                    # the CPU's, and test_metrics.py compares the CPU with the
                    # SciPy of the build machine.
                    try:
                        ref = scipy_ref(metric, x != 0, None, {}).astype(dt)
                        ref_x = scipy_ref(metric, x != 0, y != 0, {}).astype(dt)
                    except ValueError as e:
                        if "Unknown Distance Metric" not in str(e):
                            raise
                        ref = ref_x = None
                    # Within an ulp of SciPy: 1.18 rounds russellrao as
                    # (n - tt) / n where 1.10 (Debian 12, whose bits
                    # test_metrics.py demands) computes (n - tt) * (1 / n).
                    ulp = np.finfo(dt).eps
                    if ref is not None:
                        np.testing.assert_allclose(outs[1], ref, rtol=ulp, atol=0, err_msg="edm " + what)
                    outs = self.run3("cross", [fa, fb], args)
                    self.assert_same(outs, "cross " + what)
                    if ref_x is not None:
                        np.testing.assert_allclose(outs[1], ref_x, rtol=ulp, atol=0, err_msg="cross " + what)

    def test_boolean_values_weights_and_inf_rows(self):
        """BoolValues (hamming/jaccard on values, weights on every boolean
        metric), jensenshannon's inf rows and mahalanobis: GPU = CPU bytes
        (test_scipy_values.py compares the CPU with SciPy)."""
        rng = np.random.default_rng(24)
        for d in [3, 130]:  # one feature strip; several, the last partly zero padding
            v = rng.integers(0, 4, (300, d)).astype(np.float64)
            vb = rng.integers(0, 3, (141, d)).astype(np.float64)
            w = rng.random(d)
            w[1] = 0
            js = rng.random((300, d))
            js[5, 0] = -1
            js[7] = 0
            cases = [(m, v, vb, []) for m in ("hamming", "jaccard")]
            cases += [(m, v, vb, ["--weights", ",".join(repr(float(x)) for x in w)]) for m in BOOLEAN]
            cases += [("jensenshannon", js, np.abs(vb), []), ("mahalanobis", js, vb, [])]
            for precision in ["float32", "float64"]:
                dt = np.float32 if precision == "float32" else np.float64
                for metric, xa, xb, extra in cases:
                    fa, fb = self.save_npy("a.npy", xa.astype(dt)), self.save_npy("b.npy", xb.astype(dt))
                    args = ["--metric", metric, "--precision", precision, *extra]
                    what = f"{metric} {'w ' if extra else ''}d={d} {precision}"
                    self.assert_same(self.run3("edm", [fa], args), "edm " + what)
                    self.assert_same(self.run3("cross", [fa, fb], args), "cross " + what)
                    if d == 3:
                        self.assert_same(self.run3("hist", [fa], args + ["--bins", "40", "--range", "0:1"]),
                                         "hist " + what)
                    if d == 130:
                        self.assert_same(self.run3("knn", [fa], args + ["--k", "5"]), "knn " + what)

    def test_hist(self):
        rng = np.random.default_rng(23)
        x = rng.random((3000, 6))
        src = self.save_npy("x.npy", x)
        xb = self.save_npy("xb.npy", (x > 0.5).astype(np.float64))
        for metric, extra, rng_text, s in [("minkowski", ["--p", "3"], "0.2:1.2", src),
                                           ("canberra", [], "0.5:4", src), ("braycurtis", [], "0:0.6", src),
                                           ("jensenshannon", [], "0:0.6", src), ("jaccard", [], "0:1", xb),
                                           ("yule", [], "0:2", xb)]:
            for precision in ["float32", "float64"]:
                outs = self.run3("hist", [s], ["--metric", metric, *extra, "--precision", precision, "--bins", "50",
                                               "--range", rng_text])
                self.assert_same(outs, f"hist {metric} {precision}")


if __name__ == "__main__":
    unittest.main()

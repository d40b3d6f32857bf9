"""The metrics beyond the first five, against scipy.spatial.distance (scipy
1.10): minkowski, seuclidean, correlation, braycurtis, canberra,
jensenshannon, the boolean family (test_scipy_values.py: on values, weighted), weights, SciPy's
aliases, the parameters in the file, and every bad parameter.

References are SciPy's pdist/cdist in float64 on the very values tdsolve
reads (float32 runs read float32 files, so both sides start from the same
numbers). Tolerances:
  float64: |err| <= 1e-12 |ref| + atol. atol is 0 except for cosine and
    correlation, where 1 - cos is computed at the scale of 1 by both sides
    (2 (d + 5) u, u = 2^-53, as in test_reference.py), and jensenshannon,
    whose sum of x log(x/m) terms cancels to O(|x - y|^2): both sides carry
    an absolute error of about d u on the sum, so 4 d u on the distance's
    square (atol = sqrt of it would be loose; we allow 1e-13 absolute,
    which covers d <= 100 at distances >= 1e-3).
  float32: |err| <= 1e-5 |ref| + 1e-6 (tdsolve's host transforms are done
    in float64 and rounded to float32 once; its sums of the continuous
    metrics run in float32 except minkowski, canberra, jensenshannon,
    cosine and correlation, which sum in float64).
  boolean: counts are exact and each value one float64 division, as SciPy's:
    float64 equal to the last bit; float32 the float64 value rounded.
"""
import os
import unittest
import warnings

import h5py
import numpy as np
from scipy.spatial import distance as D
from scipy.spatial.distance import cdist, pdist

from common import TempDirTest, tdsolve

BOOLEAN = ["hamming", "jaccard", "dice", "russellrao", "rogerstanimoto", "sokalmichener", "sokalsneath", "yule"]
# (metric, SciPy keyword arguments, tdsolve arguments)
CONTINUOUS = [
    ("minkowski", {}, []),
    ("minkowski", {"p": 3}, ["--p", "3"]),
    ("minkowski", {"p": 2.5}, ["--p", "2.5"]),
    ("minkowski", {"p": 0.5}, ["--p", "0.5"]),
    ("minkowski", {"p": 1}, ["--p", "1"]),
    ("minkowski", {"p": np.inf}, ["--p", "inf"]),
    ("seuclidean", {}, []),
    ("correlation", {}, []),
    ("braycurtis", {}, []),
    ("canberra", {}, []),
    ("jensenshannon", {}, []),
]
WEIGHTED = [
    ("euclidean", {}, []),
    ("sqeuclidean", {}, []),
    ("cityblock", {}, []),
    ("chebyshev", {}, []),
    ("cosine", {}, []),
    ("minkowski", {"p": 3}, ["--p", "3"]),
    ("minkowski", {"p": 2.5}, ["--p", "2.5"]),
    ("minkowski", {"p": 1}, ["--p", "1"]),
    ("minkowski", {"p": 2}, ["--p", "2"]),
    ("minkowski", {"p": np.inf}, ["--p", "inf"]),
    ("correlation", {}, []),
    ("braycurtis", {}, []),
    ("canberra", {}, []),
]


def tolerance(metric, precision, d):
    if precision == "float32":
        return 1e-5, 1e-6
    atol = 0.0
    if metric in ("cosine", "correlation"):
        atol = 2 * (d + 5) * 2.0**-53
    if metric == "jensenshannon":
        atol = 1e-13
    return 1e-12, atol


def points(rng, n, d, metric):
    """Random points with ties and zeros: a repeated row, zero coordinates,
    two all-zero rows where the metric takes them (canberra: 0/0 terms;
    braycurtis: a 0/0 pair, nan in SciPy and here)."""
    x = rng.random((n, d))
    if metric in ("canberra", "cityblock", "euclidean", "sqeuclidean", "chebyshev", "minkowski", "seuclidean"):
        x = x * 2 - 1  # signs too
    x[1] = x[0]  # a tie
    x[2, : d // 2] = 0  # zero coordinates
    x[3, 1] = x[4, 1]
    if metric in ("canberra", "braycurtis"):
        x[5] = 0
        x[6] = 0
    return x


def scipy_ref(metric, xa, xb, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if metric == "jensenshannon" and "base" in kw:
            f = lambda u, v: D.jensenshannon(u, v, base=kw["base"])  # noqa: E731 (pdist takes no base)
            return pdist(xa, f) if xb is None else cdist(xa, xb, f)
        return pdist(xa, metric, **kw) if xb is None else cdist(xa, xb, metric, **kw)


class MetricsTest(TempDirTest):
    def run_metric(self, command, srcs, metric, precision, extra, name="o.h5"):
        out = self.path(name)
        if os.path.exists(out):
            os.remove(out)
        inputs = ["--input", srcs[0]] + (["--with", srcs[1]] if len(srcs) > 1 else [])
        tdsolve(command, *inputs, "--output", out, "--metric", metric, "--precision", precision, "--progress",
                "none", "--quiet", *extra, check=True)
        with h5py.File(out, "r") as f:
            return f["distances"][()], dict(f["distances"].attrs), f.attrs["job"], f

    def check(self, got, ref, metric, precision, d, what):
        want = np.float32 if precision == "float32" else np.float64
        self.assertEqual(got.dtype, want, what)
        self.assertEqual(got.shape, ref.shape, what)
        rtol, atol = tolerance(metric, precision, d)
        g = got.astype(np.float64)
        nan_g, nan_r = np.isnan(g), np.isnan(ref)
        np.testing.assert_array_equal(nan_g, nan_r, f"{what}: nan where SciPy has none, or the reverse")
        err = np.abs(g - ref)[~nan_r]
        bound = (rtol * np.abs(ref) + atol)[~nan_r]
        bad = ~(err <= bound)
        self.assertFalse(bad.any(), f"{what}: {int(bad.sum())} of {err.size} values off, worst "
                         f"{float(np.max(err - bound)) if err.size else 0:.3g} beyond the bound")

    def save(self, name, x, precision):
        return self.save_npy(name, x.astype(np.float32 if precision == "float32" else np.float64))

    def test_continuous_edm_and_cross(self):
        rng = np.random.default_rng(7)
        for precision in ["float64", "float32"]:
            for d in [3, 19]:
                for metric, kw, extra in CONTINUOUS:
                    xa = points(rng, 41, d, metric)
                    xb = points(rng, 23, d, metric)
                    fa, fb = self.save("a.npy", xa, precision), self.save("b.npy", xb, precision)
                    ra = np.load(fa).astype(np.float64)
                    rb = np.load(fb).astype(np.float64)
                    what = f"{metric} {kw} d={d} {precision}"
                    got, attrs, _, _ = self.run_metric("edm", [fa], metric, precision, extra)
                    self.check(got, scipy_ref(metric, ra, None, kw), metric, precision, d, "edm " + what)
                    self.assertEqual(attrs["metric"], metric)
                    got, _, _, _ = self.run_metric("cross", [fa, fb], metric, precision, extra)
                    self.check(got, scipy_ref(metric, ra, rb, kw), metric, precision, d, "cross " + what)

    def test_float64_bits_are_scipys(self):
        # euclidean and sqeuclidean in float64: SciPy's own values, bit for
        # bit (its loop adds d*d rounded, with no fused step: so does
        # tdsolve's float64), for edm and cross, uniform and large-range data.
        rng = np.random.default_rng(11)
        for d in [1, 3, 32]:
            for scale in [1.0, 1e6]:
                xa, xb = rng.random((500, d)) * scale, rng.random((70, d)) * scale
                fa, fb = self.save("a.npy", xa, "float64"), self.save("b.npy", xb, "float64")
                for metric in ["euclidean", "sqeuclidean"]:
                    what = f"{metric} d={d} scale={scale}"
                    got, _, _, _ = self.run_metric("edm", [fa], metric, "float64", [])
                    self.assertEqual(got.tobytes(), pdist(xa, metric).tobytes(), "edm " + what)
                    got, _, _, _ = self.run_metric("cross", [fa, fb], metric, "float64", [])
                    self.assertEqual(got.tobytes(), cdist(xa, xb, metric).tobytes(), "cross " + what)

    def test_bool_input(self):
        # NumPy bool arrays, in .npy and as h5py stores them (an HDF5 enum),
        # are read as 0 and 1: SciPy's values for the boolean metrics.
        x = np.random.default_rng(12).random((120, 9)) < 0.4
        npy = self.save_npy("b.npy", x)
        h5 = self.path("b.h5")
        with h5py.File(h5, "w") as f:
            f["x"] = x
        for src in (npy, h5 + ":x"):
            for metric in ["jaccard", "dice", "hamming", "cityblock"]:
                got, _, _, _ = self.run_metric("edm", [src], metric, "float64", [])
                np.testing.assert_array_equal(got, pdist(x, metric), f"{metric} {src}")

    def test_weights(self):
        rng = np.random.default_rng(11)
        for precision in ["float64", "float32"]:
            for d in [4, 21]:
                w = rng.random(d) * 2
                w[1] = 0  # a zero weight (chebyshev: that feature is left out, as SciPy does)
                forms = {
                    "npy": self.save_npy("w.npy", w),
                    "inline": ",".join(f"{v:.17g}" for v in w),
                    "h5": self.save_h5(f"w_{precision}_{d}.h5", "/w", w) + ":/w",
                    "column": self.save_npy("wcol.npy", w.reshape(-1, 1)),
                }
                for i, (metric, kw, extra) in enumerate(WEIGHTED):
                    form = list(forms)[i % len(forms)]
                    xa = points(rng, 37, d, metric)
                    xb = points(rng, 19, d, metric)
                    fa, fb = self.save("a.npy", xa, precision), self.save("b.npy", xb, precision)
                    ra, rb = np.load(fa).astype(np.float64), np.load(fb).astype(np.float64)
                    args = [*extra, "--weights", forms[form]]
                    what = f"{metric} {kw} w ({form}) d={d} {precision}"
                    got, attrs, job, _ = self.run_metric("edm", [fa], metric, precision, args)
                    self.check(got, scipy_ref(metric, ra, None, dict(kw, w=w)), metric, precision, d, "edm " + what)
                    self.assertEqual(attrs["weights"], "/weights")
                    self.assertIn("weights_fnv1a64=", job)
                    with h5py.File(self.path("o.h5"), "r") as f:
                        np.testing.assert_array_equal(f["weights"][()], w)
                    got, _, _, _ = self.run_metric("cross", [fa, fb], metric, precision, args)
                    self.check(got, scipy_ref(metric, ra, rb, dict(kw, w=w)), metric, precision, d,
                               "cross " + what)

    def test_seuclidean_variance_and_jensenshannon_base(self):
        rng = np.random.default_rng(5)
        x, y = rng.random((30, 6)), rng.random((12, 6))
        fa, fb = self.save_npy("a.npy", x), self.save_npy("b.npy", y)
        v = rng.random(6) + 0.1
        got, attrs, job, _ = self.run_metric("edm", [fa], "seuclidean", "float64",
                                             ["--variance", ",".join(f"{a:.17g}" for a in v)])
        self.check(got, pdist(x, "seuclidean", V=v), "seuclidean", "float64", 6, "seuclidean V given")
        self.assertEqual(attrs["variance"], "/variance")
        with h5py.File(self.path("o.h5"), "r") as f:
            np.testing.assert_array_equal(f["variance"][()], v)
        # Default V: cdist's is the variance of both sets stacked.
        got, _, _, _ = self.run_metric("cross", [fa, fb], "seuclidean", "float64", [])
        self.check(got, cdist(x, y, "seuclidean"), "seuclidean", "float64", 6, "cross seuclidean default V")
        with h5py.File(self.path("o.h5"), "r") as f:
            np.testing.assert_allclose(f["variance"][()], np.var(np.vstack([x, y]), axis=0, ddof=1), rtol=1e-13)
        for base in [2, 10, 1.5]:
            got, attrs, job, _ = self.run_metric("edm", [fa], "jensenshannon", "float64", ["--base", str(base)])
            self.check(got, scipy_ref("jensenshannon", x, None, {"base": base}), "jensenshannon", "float64", 6,
                       f"jensenshannon base {base}")
            self.assertEqual(attrs["base"], base)
            self.assertIn(f"base={base:.17g}", job)
        got, _, _, _ = self.run_metric("cross", [fa, fb], "js", "float32", ["--base", "2"])
        self.check(got, scipy_ref("jensenshannon", x.astype(np.float32).astype(np.float64),
                                  y.astype(np.float32).astype(np.float64), {"base": 2}),
                   "jensenshannon", "float32", 6, "cross jensenshannon base 2 float32")
        _, attrs, job, _ = self.run_metric("edm", [fa], "minkowski", "float64", ["--p", "3"])
        self.assertEqual(attrs["p"], 3.0)
        self.assertIn("\np=3\n", job)

    def test_boolean(self):
        rng = np.random.default_rng(3)
        for d in [5, 64, 70, 130]:
            x = (rng.random((45, d)) < 0.4).astype(np.float64)
            x[0] = 0
            x[1] = 0  # two all-false rows: 0/0 for jaccard (0), dice and sokalsneath (nan), yule (0)
            x[2] = 1
            x[3] = x[4]
            x[5, : d // 2] = 2.5  # nonzero is true (hamming and jaccard: a value of its own, as SciPy)
            x[6, -1] = -1.0
            y = (rng.random((17, d)) < 0.6).astype(np.float64)
            y[0] = 0
            for precision in ["float64", "float32"]:
                fa, fb = self.save("a.npy", x, precision), self.save("b.npy", y, precision)
                for metric in BOOLEAN:
                    what = f"{metric} d={d} {precision}"
                    xb, yb = (x, y) if metric in ("hamming", "jaccard") else (x != 0, y != 0)
                    for command, ref in [("edm", scipy_ref(metric, xb, None, {})),
                                         ("cross", scipy_ref(metric, xb, yb, {}))]:
                        srcs = [fa] if command == "edm" else [fa, fb]
                        got, attrs, _, _ = self.run_metric(command, srcs, metric, precision, [])
                        want = ref.astype(np.float32) if precision == "float32" else ref
                        self.assertEqual(got.dtype, want.dtype)
                        np.testing.assert_array_equal(got, want, f"{command} {what}")
                        self.assertEqual(attrs["features"], d)

    def test_aliases_any_case(self):
        rng = np.random.default_rng(9)
        x = rng.random((12, 4))
        src = self.save_npy("x.npy", x)
        xb = self.save_npy("b.npy", (x > 0.5).astype(np.float64))
        ours = {m for m, _, _ in CONTINUOUS} | set(BOOLEAN) | {"euclidean", "sqeuclidean", "cityblock", "chebyshev",
                                                            "cosine"}
        seen = set()
        for alias, info in D._METRIC_ALIAS.items():
            if info.canonical_name not in ours:
                continue
            seen.add(info.canonical_name)
            for spelled in [alias, alias.upper(), alias[:1].upper() + alias[1:]]:
                srcs = [xb] if info.canonical_name in BOOLEAN else [src]
                got, attrs, _, _ = self.run_metric("edm", srcs, spelled, "float64", [])
                self.assertEqual(attrs["metric"], info.canonical_name, spelled)
                self.assertEqual(got.shape, (66,), spelled)
        self.assertEqual(seen, ours, "a metric of tdsolve without SciPy aliases?")

    def test_hist_and_bench(self):
        rng = np.random.default_rng(1)
        x = rng.random((300, 5))
        src = self.save_npy("x.npy", x)
        for metric, kw, extra in [("minkowski", {"p": 3}, ["--p", "3"]), ("braycurtis", {}, []),
                                  ("canberra", {}, []), ("jensenshannon", {}, []), ("correlation", {}, [])]:
            ref = pdist(x, metric, **kw)
            lo, hi = float(np.quantile(ref, 0.05)), float(np.quantile(ref, 0.95))
            out = self.path("h.h5")
            tdsolve("hist", "--input", src, "--output", out, "--overwrite", "--metric", metric, *extra, "--bins", "20",
                    "--range", f"{lo!r}:{hi!r}", "--precision", "float64", "--progress", "none", "--quiet",
                    check=True)
            with h5py.File(out, "r") as f:
                counts = f["counts"][()]
                self.assertEqual(f["counts"].attrs["metric"], metric)
                total = int(counts.sum()) + int(f["underflow"][()]) + int(f["overflow"][()])
            want, _ = np.histogram(ref, bins=20, range=(lo, hi))
            # Values within 1e-12 of an edge may fall either side.
            self.assertLessEqual(int(np.abs(counts - want).sum()), 2, metric)
            self.assertEqual(total, ref.size)
        xb = (x > 0.5).astype(np.float64)
        bsrc = self.save_npy("b.npy", xb)
        ref = pdist(xb != 0, "jaccard")
        tdsolve("hist", "--input", bsrc, "--output", self.path("j.h5"), "--metric", "jaccard", "--bins", "10",
                "--range", "0:1", "--progress", "none", "--quiet", check=True)
        with h5py.File(self.path("j.h5"), "r") as f:
            want, _ = np.histogram(ref.astype(np.float32), bins=10, range=(0, 1))
            np.testing.assert_array_equal(f["counts"][()], want)
        for extra in [["--metric", "minkowski", "--p", "3"], ["--metric", "yule"], ["--metric", "canberra",
                                                                                     "--weights", "1,2,3,4,5"]]:
            r = tdsolve("bench", "--input", src, *extra, "--repeat", "1")
            self.assertEqual(r.returncode, 0, r.stderr)

    def test_config_file_weights_path(self):
        # A --weights file in a config is relative to the config's folder;
        # an inline list stays a list; the file's `options` reads back.
        rng = np.random.default_rng(6)
        x = rng.random((20, 3))
        os.makedirs(self.path("job"))
        np.save(self.path("job/x.npy"), x)
        w = np.array([0.5, 2.0, 1.0])
        np.save(self.path("job/w.npy"), w)
        with open(self.path("job/run.ini"), "w") as f:
            f.write("input = x.npy\nmetric = minkowski\np = 3\nweights = w.npy\n")
        out = self.path("c.h5")
        tdsolve("edm", "--config", self.path("job/run.ini"), "--output", out, "--precision", "float64", "--quiet",
                check=True, cwd=self.dir)
        with h5py.File(out, "r") as f:
            got = f["distances"][()]
            options = f.attrs["options"]
        self.check(got, pdist(x, "minkowski", p=3, w=w), "minkowski", "float64", 3, "config weights")
        self.assertIn("weights = " + os.path.realpath(self.path("job/w.npy")), options)
        with open(self.path("job/inline.ini"), "w") as f:
            f.write("input = x.npy\nmetric = cityblock\nweights = 0.5,2,1\n")
        tdsolve("edm", "--config", self.path("job/inline.ini"), "--output", out, "--overwrite", "--precision",
                "float64", "--quiet", check=True, cwd=self.dir)
        with h5py.File(out, "r") as f:
            self.check(f["distances"][()], pdist(x, "cityblock", w=w), "cityblock", "float64", 3, "inline")
            self.assertIn("weights = 0.5,2,1", f.attrs["options"])

    def test_resume_compares_the_parameters(self):
        rng = np.random.default_rng(2)
        src = self.save_npy("x.npy", rng.random((50, 3)))
        out = self.path("r.h5")
        tdsolve("edm", "--input", src, "--output", out, "--metric", "minkowski", "--p", "3", "--quiet", check=True)
        r = tdsolve("edm", "--input", src, "--output", out, "--metric", "minkowski", "--p", "3", "--resume")
        self.assertEqual(r.returncode, 0, r.stderr)
        # A different p is another job: a complete file of p=3 is not a result of p=4.
        partial = out + ".partial"
        os.rename(out, partial)
        r = tdsolve("edm", "--input", src, "--output", out, "--metric", "minkowski", "--p", "4", "--resume")
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("p: 3 in the file, 4 now", r.stderr)

    def test_bad_parameters(self):
        rng = np.random.default_rng(4)
        x = rng.random((10, 3))
        src = self.save_npy("x.npy", x)
        notpd = self.save_npy("notpd.npy", np.array([[1.0, 2, 0], [2, 1, 0], [0, 0, 1]]))
        vi2 = self.save_npy("vi2.npy", np.eye(2))
        few = self.save_npy("few.npy", x[:3])
        flat = x.copy()
        flat[:, 2] = flat[:, 0] + flat[:, 1]  # a combination of the others: singular covariance
        fsrc = self.save_npy("flat.npy", flat)
        const = x.copy()
        const[:, 2] = 1.5
        csrc = self.save_npy("const.npy", const)
        wrong = self.save_npy("w2.npy", np.ones(4))
        negw = self.save_npy("wneg.npy", np.array([1.0, -1.0, 1.0]))
        mat = self.save_npy("wmat.npy", np.ones((2, 3)))
        g = ["--input", src]
        cases = [
            (g + ["--metric", "minkowski", "--p", "0"], ["--p must be a number > 0"]),
            (g + ["--metric", "minkowski", "--p", "-2"], ["--p must be a number > 0"]),
            (g + ["--metric", "minkowski", "--p", "nan"], ["--p must be a number > 0"]),
            (g + ["--metric", "minkowski", "--p", "two"], ["--p must be a number > 0"]),
            (g + ["--metric", "euclidean", "--p", "3"], ["--p applies to --metric minkowski"]),
            (g + ["--metric", "js", "--base", "1"], ["--base must be"]),
            (g + ["--metric", "js", "--base", "0"], ["--base must be"]),
            (g + ["--metric", "js", "--base", "0.5"], ["--base must be a finite number > 1"]),
            (g + ["--metric", "js", "--base", "-2"], ["--base must be"]),
            (g + ["--metric", "cosine", "--base", "2"], ["--base applies to --metric jensenshannon"]),
            (g + ["--metric", "seuclidean", "--weights", "1,1,1"], ["--weights does not apply", "seuclidean"]),
            (g + ["--metric", "jensenshannon", "--weights", "1,1,1"], ["--weights does not apply"]),
            (g + ["--metric", "mahalanobis", "--weights", "1,1,1"], ["--weights does not apply"]),
            (g + ["--metric", "euclidean", "--vi", vi2], ["--vi applies to --metric mahalanobis"]),
            (g + ["--metric", "mahalanobis", "--vi", vi2], ["--vi", "2 × 2", "3 × 3"]),
            (g + ["--metric", "mahalanobis", "--vi", mat], ["--vi", "2 × 3"]),
            (g + ["--metric", "mahalanobis", "--vi", notpd], ["not positive definite", "nan"]),
            (g + ["--metric", "mahalanobis", "--vi", self.path("none.npy")], ["none.npy"]),
            (["--input", few, "--metric", "mahalanobis"], ["3 points", "at least 4", "--vi"]),
            (["--input", fsrc, "--metric", "mahalanobis"], ["singular", "--vi"]),
            (["--input", csrc, "--metric", "mahalanobis"], ["singular", "--vi"]),
            (g + ["--metric", "euclidean", "--weights", "1,-1,1"], ["weight 1 is -1", ">= 0"]),
            (g + ["--metric", "euclidean", "--weights", "0,0,0"], ["every weight is 0"]),
            (g + ["--metric", "euclidean", "--weights", "1,1"], ["--weights gives 2 values", "d = 3"]),
            (g + ["--metric", "euclidean", "--weights", wrong], ["--weights gives 4 values", "d = 3"]),
            (g + ["--metric", "euclidean", "--weights", negw], ["weight 1 is -1"]),
            (g + ["--metric", "euclidean", "--weights", mat], ["one row or one column"]),
            (g + ["--metric", "euclidean", "--weights", self.path("none.npy")], ["none.npy"]),
            (g + ["--metric", "euclidean", "--variance", "1,1,1"], ["--variance applies to --metric seuclidean"]),
            (g + ["--metric", "seuclidean", "--variance", "1,0,1"], ["variance 1 is 0"]),
            (g + ["--metric", "seuclidean", "--variance", "1,1"], ["--variance gives 2 values"]),
            (["--input", csrc, "--metric", "seuclidean"], ["feature 2", "constant", "--variance"]),
            (["--input", csrc, "--metric", "correlation", "--columns", "2"], ["all zeros once centred"]),
            (g + ["--metric", "l7"], ["unknown --metric"]),
        ]
        for args, expect in cases:
            self.run_bad_command("edm", args, expect)
        hist = ["--input", src, "--bins", "5", "--range", "0:1"]
        self.run_bad_command("hist", hist + ["--metric", "canberra", "--box", "1,1,1"], ["--box does not apply"])
        self.run_bad_command("hist", hist + ["--metric", "minkowski", "--p", "3", "--box", "1,1,1"],
                             ["--box does not apply"])
        self.run_bad_command("hist", hist + ["--box", "1,1,1", "--weights", "1,1,1"],
                             ["--box and --weights"])
        self.run_bad_command("cross", ["--input", src, "--with", src, "--metric", "minkowski", "--p", "0"],
                             ["--p must be"])


if __name__ == "__main__":
    unittest.main()
